import Dispatch
import Foundation
import MemoCore
import Synchronization

/// The one thread that applies changes to a server's `StoreCore`, strictly in revision order and never skipping.
///
/// Its connection LISTENs for the head revision other servers notify after they commit, and reads the changes
/// table after the last applied revision on every notification and at least every second: a notification is only
/// a hint (PostgreSQL drops those sent while this connection is down), the table is the truth. The server's own
/// writer hands over the changes it committed, which are applied without a read when they come next, and which
/// this thread announces to the other servers after the commit, in a transaction of its own, so that a full
/// notification queue can never fail a write.
final class PostgresFeed: Sendable {
    /// A committed write waiting until this server has applied its last revision.
    private struct Waiter {
        let upTo: UInt64
        let deadline: DispatchTime
        let finish: @Sendable (Bool) -> Void
    }

    private struct State {
        var known: [UInt64: Change] = [:]
        /// The newest revision this server's writer committed: what the next notification announces.
        var ownHead: UInt64 = 0
        var waiters: [Waiter] = []
        var stopping = false
        var behind: String?
    }

    /// How many changes one read takes; a feed far behind reads again at once.
    static let page = 2_000
    /// How long a committed write waits to be applied here before it is answered as storage-unavailable.
    static let applyTimeout: DispatchTimeInterval = .seconds(5)

    private let core: StoreCore
    private let link: PostgresLink
    /// How often the table is read when no notification came: what a lost notification costs at most.
    private let recheckMillis: Int
    private let state = Mutex(State())
    private let poke: WakePipe
    private let stopped = DispatchSemaphore(value: 0)
    private let log: @Sendable (String) -> Void
    private let stats: PostgresStats

    init(
        core: StoreCore, link: PostgresLink, connection: PGConnection, recheckMillis: Int = 1_000,
        stats: PostgresStats = PostgresStats(), log: @escaping @Sendable (String) -> Void
    ) throws(MemoError) {
        self.core = core
        self.stats = stats
        self.link = link
        self.recheckMillis = recheckMillis
        self.log = log
        poke = try WakePipe()
        let thread = Thread { [self] in self.run(connection) }
        thread.name = "memo-pg-feed"
        thread.start()
    }

    /// Hands over changes the writer committed, and the other servers' changes its call returned before them;
    /// `finish` runs once the writer's are applied here (true), or with false when that takes longer than
    /// `applyTimeout` or the feed stops first.
    func committed(
        _ changes: [Change], after earlier: [Change] = [], finish: @escaping @Sendable (Bool) -> Void
    ) {
        guard let last = changes.last else { return finish(true) }
        state.withLock { state in
            for change in earlier + changes { state.known[change.revision] = change }
            state.ownHead = max(state.ownHead, last.revision)
            state.waiters.append(Waiter(upTo: last.revision, deadline: .now() + Self.applyTimeout, finish: finish))
        }
        poke.signal()
    }

    /// Why this server can no longer follow the database (it fell behind the retained history), once it did.
    var behind: String? { state.withLock { $0.behind } }

    /// Applies what it can, finishes every waiter and stops the thread; returns when it has stopped.
    func stop() {
        state.withLock { $0.stopping = true }
        poke.signal()
        stopped.wait()
    }

    // MARK: Thread

    private func run(_ initial: PGConnection) {
        var connection: PGConnection? = initial
        // The table is read at start, after a reconnect, when a notification says the head moved past what is
        // applied, when the writer's changes leave a hole (another server's changes come first), and at least
        // every `recheckMillis` (a second), in case a notification was lost. This server's own writes need no read.
        var readDue = true
        var lastRead = DispatchTime.now()
        var notified: UInt64 = 0
        while true {
            if connection == nil {
                connection = link.connect(listening: true)
                if connection != nil { readDue = true }
            }
            // One notification covers every batch committed since the last: the other servers read the table. It
            // is sent first and its answer collected after this server's own apply, so that neither waits for
            // the other.
            let ownHead = state.withLock { $0.ownHead }
            var notifying = false
            if ownHead > notified, let current = connection {
                do throws(PGError) {
                    try current.send(PostgresSQL.notify(head: ownHead))
                    notifying = true
                } catch {
                    link.lost(error)
                    connection = nil
                }
            }
            applyKnown()
            // Answered before any read: a write of this server waits for nothing but its own commit.
            let stopping = finishWaiters()
            if notifying, let current = connection {
                do throws(PGError) {
                    try current.finish()
                    notified = ownHead
                    StageTrace.record(.notified, ownHead)
                } catch {
                    link.lost(error)
                    connection = nil
                }
            }
            if stopping { break }
            let recheck = lastRead + .milliseconds(recheckMillis)
            readDue = readDue || hasHole() || DispatchTime.now() >= recheck
            if readDue, let current = connection {
                do throws(PGError) {
                    try catchUp(current)
                    readDue = false
                    lastRead = .now()
                } catch {
                    link.lost(error)
                    connection = nil
                }
                applyKnown()
                if finishWaiters() { break }
            }
            // A notification that came with a query's answer already sits in libpq's buffer, and the socket would
            // not wake the wait for it: it is looked for before sleeping as well as after.
            if !readDue, takeNotifications(&connection) {
                readDue = true
                continue
            }
            // Sleeps until the next periodic read or the first waiter's deadline, whichever comes first.
            let wakeAt = state.withLock { state in
                state.waiters.reduce(lastRead + .milliseconds(recheckMillis)) { min($0, $1.deadline) }
            }
            let untilWake = Int(wakeAt.uptimeNanoseconds / 1_000_000)
                - Int(DispatchTime.now().uptimeNanoseconds / 1_000_000) + 1
            let timeout = connection == nil
                ? min(link.retryDelayMillis, 1_000) : min(max(0, untilWake), Int(Int32.max))
            poke.wait(alsoOn: connection?.socket, timeoutMillis: timeout)
            readDue = takeNotifications(&connection) || readDue
        }
        // The last writes handed over are applied, or answered as not applied, before the thread ends.
        applyKnown()
        _ = finishWaiters()
        stopped.signal()
    }

    /// Reads what arrived on the connection; true when a notification announces a revision not applied yet.
    /// A broken connection is dropped (the next turn reconnects and reads).
    private func takeNotifications(_ connection: inout PGConnection?) -> Bool {
        guard let current = connection else { return false }
        do throws(PGError) {
            let applied = core.revision
            var due = false
            for payload in try current.notifications() where (UInt64(payload) ?? .max) > applied {
                if let head = UInt64(payload) { stats.saw(head: head) }
                due = true
                StageTrace.record(.woken, UInt64(payload) ?? 0)
            }
            return due
        } catch {
            link.lost(error)
            connection = nil
            return false
        }
    }

    /// True when the writer handed over changes that cannot be applied yet: others' changes come before them.
    private func hasHole() -> Bool {
        let applied = core.revision
        return state.withLock { state in !state.known.isEmpty && state.known[applied + 1] == nil }
    }

    /// Reads and applies every change after the applied revision, a page at a time.
    private func catchUp(_ connection: PGConnection) throws(PGError) {
        while true {
            applyKnown()
            let applied = core.revision
            let rows = try connection.execute(
                PostgresSQL.changesAfter, [.text(String(applied)), .text(String(Self.page))])
            guard rows.rowCount > 0 else {
                stats.feedProgressed()
                return
            }
            let floor = UInt64(rows.integer(0, 0))
            var changes: [Change] = []
            for row in 0..<rows.rowCount where !rows.isNull(row, 1) {
                guard let change = try? PostgresSchema.change(rows, row, from: 1),
                    change.revision == applied + UInt64(changes.count) + 1
                else { break }  // never skip: a hole waits for the next read
                changes.append(change)
            }
            StageTrace.record(.read, changes)
            if changes.isEmpty && floor > applied {
                let reason = "this server applied revision \(applied), but the database keeps only changes after "
                    + "\(floor): restart it to load a fresh snapshot"
                let first = state.withLock { state in
                    defer { state.behind = reason }
                    return state.behind == nil
                }
                if first { log(reason) }
                return
            }
            core.apply(changes)
            if let last = changes.last { stats.saw(head: last.revision) }
            if changes.count < Self.page {
                stats.feedProgressed()
                return
            }
        }
    }

    /// Applies the writer's changes that come next, and forgets those already applied.
    private func applyKnown() {
        var next: [Change] = []
        state.withLock { state in
            guard !state.known.isEmpty else { return }
            var revision = core.revision
            while let change = state.known[revision + 1] {
                next.append(change)
                revision += 1
            }
            state.known = state.known.filter { $0.key > revision }
        }
        core.apply(next)
        if !next.isEmpty { stats.feedProgressed() }
    }

    /// Runs the waiters whose writes are applied (or out of time); returns whether the feed is stopping.
    private func finishWaiters() -> Bool {
        let applied = core.revision
        let now = DispatchTime.now()
        let (done, late, stopping) = state.withLock { state in
            let done = state.waiters.filter { $0.upTo <= applied }
            let late = state.waiters.filter { $0.upTo > applied && (state.stopping || $0.deadline <= now) }
            state.waiters.removeAll { $0.upTo <= applied || state.stopping || $0.deadline <= now }
            return (done, late, state.stopping)
        }
        for waiter in done { waiter.finish(true) }
        for waiter in late { waiter.finish(false) }
        return stopping
    }
}
