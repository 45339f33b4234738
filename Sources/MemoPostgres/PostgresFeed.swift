import Dispatch
import Foundation
import MemoDiagnostics
import MemoModel
import MemoStore
import Synchronization

/// The one thread that applies changes to a server's `StoreState`, strictly in revision order and never skipping.
///
/// Its connection LISTENs for the notifications other servers' claimers send after their claims: the durable head,
/// and the sender's own changes the claim covered when they fit (`FeedPayload`). Those changes wait in a reorder
/// buffer keyed by revision (several servers' payloads interleave, and arrive in their claims' order, not in their
/// revisions'), and the run that continues the applied revision gap-free is applied without a read. The server's
/// own writer hands over the changes it committed and made durable, which join the same run; its own
/// notifications are known by their origin and not decoded. When a revision up to the newest head announced is
/// still missing `gapWaitMillis` after the gap appeared, or a notification carries the head alone (the sender's
/// changes did not fit, or an older memo-server sent it), or is not one, the feed reads the changes table after
/// the last applied revision, up to the durable head (`PostgresSQL.changesAfter`); it reads it at least every
/// second too: a notification is only a hint (PostgreSQL drops those sent while this connection is down), the
/// table is the truth. A read that catches up drops whatever carried change still waits: a payload is sent only
/// after its claim, so the read covers every change a true one carried, and what is left was not one. A gap is
/// never skipped.
///
/// Every call has the storage timeout as its deadline: a read that gets no answer in time is a
/// lost connection, made again at once. When a read has been due for longer than the lag bound without
/// completing (it is not ready from then on, even while the read still waits for its deadline), or the database no
/// longer holds the changes after the applied revision, the server cannot follow:
/// this thread lets its clients go (`observeLetGo`), refuses writes and reads meanwhile (`behind`, `readiness`),
/// reloads a snapshot and serves again.
final class PostgresFeed: Sendable {
    /// A committed write waiting until this server has applied its last revision.
    private struct Waiter {
        let upTo: UInt64
        let deadline: DispatchTime
        let finish: @Sendable (Bool) -> Void
    }

    private struct State {
        /// The changes this server's writer handed over.
        var known: [UInt64: Change] = [:]
        /// The changes notifications' payloads carried, not applied yet (past a gap): the reorder buffer.
        var carried: [UInt64: Change] = [:]
        var waiters: [Waiter] = []
        var stopping = false
        /// Why this server refuses writes and reads: it cannot follow the database (nil while it serves).
        var letGo: String?
        var connected = true
        var reloading = false
        /// Set when the connection was lost, until a read catches up again: that transition is logged once.
        var recovering = false
    }

    /// How many changes one read takes; a feed far behind reads again at once.
    static let page = 2_000
    /// The deadline of a snapshot's read (at start, and when a server that fell behind reloads).
    static let snapshotTimeoutMillis = 60_000

    private let storeState: StoreState
    private let link: PostgresLink
    private let historyCapacity: Int
    /// How often the table is read when no notification came: what a lost notification costs at most.
    private let recheckMillis: Int
    /// How long a read may stay due before this server lets its clients go and reloads.
    private let maxLagMillis: Int
    private let gapWaitMillis: Int
    private let state = Mutex(State())
    /// True while serving: the fast path of `readiness`, read on every read request.
    private let serving = Atomic<Bool>(true)
    /// Since when (uptime nanoseconds) a read of the changes table has been due and not done, 0 when none: how far
    /// behind the feed may be. Written by the feed's thread only; `readiness` reads it while that thread may be
    /// held in a call that gets no answer (a frozen backend) until the storage timeout.
    private let dueSince = Atomic<UInt64>(0)
    private let letGoSubject = Subject<String>()
    private let poke: WakePipe
    private let stopped = DispatchSemaphore(value: 0)
    private let log: @Sendable (LogRecord) -> Void
    private let stats: PostgresStats

    init(
        storeState: StoreState, link: PostgresLink, connection: PGConnection, historyCapacity: Int,
        recheckMillis: Int = 1_000, maxLagMillis: Int, gapWaitMillis: Int = PostgresStore.defaultGapWaitMillis,
        stats: PostgresStats = PostgresStats(), log: @escaping @Sendable (LogRecord) -> Void
    ) throws(MemoError) {
        self.storeState = storeState
        self.stats = stats
        self.link = link
        self.historyCapacity = historyCapacity
        self.recheckMillis = recheckMillis
        self.maxLagMillis = maxLagMillis
        self.gapWaitMillis = gapWaitMillis
        self.log = log
        poke = try WakePipe()
        let handoff = PGConnectionHandoff(connection)
        let thread = Thread { [self] in self.run(handoff) }
        thread.name = "memo-pg-feed"
        thread.start()
    }

    /// Hands over changes the writer committed, and the other servers' changes its call returned before them;
    /// `finish` runs once the writer's are applied here (true), or with false when `deadline` passes first or
    /// the feed stops.
    func committed(
        _ changes: [Change], after earlier: [Change] = [], deadline: DispatchTime,
        finish: @escaping @Sendable (Bool) -> Void
    ) {
        guard let last = changes.last else { return finish(true) }
        state.withLock { state in
            for change in earlier + changes { state.known[change.revision] = change }
            state.waiters.append(Waiter(upTo: last.revision, deadline: deadline, finish: finish))
        }
        poke.signal()
    }

    /// Why this server refuses writes, while it cannot follow the database.
    var behind: String? {
        guard !serving.load(ordering: .acquiring) else { return nil }
        return state.withLock { $0.letGo.map { "this server cannot follow the database (\($0)); it is reloading" } }
    }

    /// See `PostgresStore.readiness`.
    var readiness: StoreReadiness {
        if serving.load(ordering: .acquiring) {
            // Past the lag bound the feed cannot say it holds every change, even while its thread still waits for
            // an answer (it lets go once the call's deadline ends the wait).
            if let lag = lagMillis(), lag > maxLagMillis { return .notReady("feed lagging \(Self.seconds(lag)) s") }
            return .ready
        }
        return state.withLock { state in
            guard let reason = state.letGo else { return .ready }
            if !state.connected { return .notReady("store unreachable") }
            if state.reloading { return .notReady("loading a snapshot") }
            return .notReady(reason)
        }
    }

    func observeLetGo(_ handler: @escaping @Sendable (String) -> Void) -> Subscription {
        letGoSubject.subscribe(handler)
    }

    /// Applies what it can, finishes every waiter and stops the thread; returns when it has stopped.
    func stop() {
        state.withLock { $0.stopping = true }
        poke.signal()
        stopped.wait()
    }

    // MARK: Thread

    /// How a read of the changes table ended.
    private enum ReadEnd {
        /// Every change up to the head read is applied.
        case caughtUp
        /// The database no longer holds the changes after the applied revision.
        case belowHistory(String)
    }

    private func run(_ initial: PGConnectionHandoff) {
        var connection: PGConnection? = initial.take()
        // The table is read at start, after a reconnect, when a notification announces a head without carrying
        // its sender's changes, when a gap below what is known to exist (a head announced, the writer's changes,
        // changes carried) stays open for `gapWaitMillis`, and at least every `recheckMillis` (a second), in case
        // a notification was lost. This server's own writes and changes carried gap-free need no read.
        var readDue = true
        var lastRead = DispatchTime.now()
        var mustReload = false
        /// The newest head notifications announced, and since when a revision up to what is known has been missing.
        var announced: UInt64 = 0
        var gapSince: DispatchTime?
        /// The committed head at the last look at the heads, when no claim covered it then; when that look was.
        var unclaimed: UInt64?
        var headsSeen = DispatchTime.now()
        while true {
            if connection == nil {
                // While a read is due, connecting may take only what is left of the lag bound: a connect that
                // gets no answer (PostgreSQL frozen, or cut off) would otherwise hold this thread for the whole
                // storage timeout past the bound before the server lets go.
                let since = dueSince.load(ordering: .relaxed)
                let bound = mustReload || since == 0
                    ? nil : DispatchTime(uptimeNanoseconds: since) + .milliseconds(maxLagMillis + 1)
                connection = link.connect(listening: true, until: bound)
                if connection != nil {
                    readDue = true
                    state.withLock { $0.connected = true }
                }
            }
            if mustReload, let current = connection {
                if reload(current) {
                    mustReload = false
                    lastRead = .now()
                } else {
                    connection = nil
                }
                continue
            }
            applyKnown()
            // Answered before any read: a write of this server waits for nothing but its own commit.
            let stopping = finishWaiters()
            if stopping { break }
            let recheck = lastRead + .milliseconds(recheckMillis)
            if hasGap(below: announced) {
                let now = DispatchTime.now()
                if gapSince == nil { gapSince = now }
                if now >= gapSince! + .milliseconds(gapWaitMillis) { readDue = true }
            } else {
                gapSince = nil
            }
            readDue = readDue || DispatchTime.now() >= recheck
            if readDue {
                // Due since now, or since the periodic read's time when that passed while this thread was held
                // elsewhere (a NOTIFY's answer that never came): that wait counts against the lag bound too.
                let due = min(DispatchTime.now(), recheck).uptimeNanoseconds
                let since = dueSince.load(ordering: .relaxed)
                if since == 0 || due < since { dueSince.store(due, ordering: .relaxed) }
            }
            if readDue, let current = connection {
                do throws(PGError) {
                    switch try catchUp(current) {
                    case .caughtUp:
                        readDue = false
                        if DispatchTime.now() >= headsSeen + .milliseconds(recheckMillis) {
                            headsSeen = .now()
                            readDue = try claimUnclaimed(on: current, &unclaimed)
                        }
                        // The read covers every change a true payload carried and every head announced before it.
                        state.withLock { $0.carried = [:] }
                        announced = min(announced, storeState.revision)
                        gapSince = nil
                        lastRead = .now()
                        dueSince.store(0, ordering: .relaxed)
                        let recovered = state.withLock { state in
                            defer { state.recovering = false }
                            return state.recovering
                        }
                        if recovered {
                            log(LogRecord(
                                .info, "feed_caught_up", [("revision", "\(storeState.revision)")],
                                text: "PostgreSQL feed caught up at revision \(storeState.revision)"))
                        }
                    case .belowHistory(let reason):
                        letGo(reason)
                        mustReload = true
                        continue
                    }
                } catch {
                    lose(error, &connection)
                    // A read that stayed due past the bound (a frozen backend answers nothing until the call's
                    // deadline) means this server could not follow meanwhile: it lets go and reloads. Otherwise it
                    // reconnects at once (the link allows a first attempt without waiting) and reads again.
                    if let lag = lagMillis(), lag > maxLagMillis {
                        letGo("feed lagging \(Self.seconds(lag)) s")
                        mustReload = true
                    }
                    continue
                }
                applyKnown()
                if finishWaiters() { break }
            }
            if !mustReload, let lag = lagMillis(), lag > maxLagMillis {
                letGo(connection == nil
                      ? "store unreachable for \(Self.seconds(lag)) s" : "feed lagging \(Self.seconds(lag)) s")
                mustReload = true
                continue
            }
            // A notification that came with a query's answer already sits in libpq's buffer, and the socket would
            // not wake the wait for it: it is looked for before sleeping as well as after.
            if !readDue, let taken = takeNotifications(&connection, announced: &announced) {
                if taken == .due { readDue = true }
                continue  // a read, or the waiters the carried changes let through
            }
            // Sleeps until the next periodic read (or, while disconnected, the next attempt to connect), the first
            // waiter's deadline, the end of a gap's wait, or the lag bound, whichever comes first.
            let wakeAt = state.withLock { state in
                var wake = state.waiters.reduce(
                    connection == nil ? DispatchTime.distantFuture : lastRead + .milliseconds(recheckMillis)
                ) { min($0, $1.deadline) }
                if let gapSince { wake = min(wake, gapSince + .milliseconds(gapWaitMillis)) }
                let since = dueSince.load(ordering: .relaxed)
                if !mustReload, since != 0 {
                    wake = min(wake, DispatchTime(uptimeNanoseconds: since) + .milliseconds(maxLagMillis + 1))
                }
                return wake
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let untilWake = wakeAt.uptimeNanoseconds > now
                ? Int(min((wakeAt.uptimeNanoseconds - now) / 1_000_000 + 1, UInt64(Int32.max))) : 0
            let timeout = connection == nil ? min(link.retryDelayMillis, 1_000, untilWake) : untilWake
            poke.wait(alsoOn: connection?.socket, timeoutMillis: timeout)
            readDue = takeNotifications(&connection, announced: &announced) == .due || readDue
        }
        // The last writes handed over are applied, or answered as not applied, before the thread ends.
        applyKnown()
        _ = finishWaiters()
        stopped.signal()
    }

    /// Drops a connection that broke or did not answer in time; the link logs the loss once.
    private func lose(_ error: PGError, _ connection: inout PGConnection?) {
        link.lost(error)
        connection = nil
        // The table is read again on the next connection: from now on this server cannot confirm it holds every
        // change, and the lag bound runs.
        if dueSince.load(ordering: .relaxed) == 0 {
            dueSince.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        }
        state.withLock { state in
            state.connected = false
            state.recovering = true
        }
    }

    /// How long a read has been due without being done, when one is.
    private func lagMillis() -> Int? {
        let since = dueSince.load(ordering: .relaxed)
        guard since != 0 else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return now > since ? Int((now - since) / 1_000_000) : 0
    }

    private static func seconds(_ millis: Int) -> String {
        String(format: "%.1f", Double(millis) / 1000)
    }

    /// Stops serving: writes and reads are refused, the server's clients are let go (once per episode).
    private func letGo(_ reason: String) {
        let first = state.withLock { state in
            defer { state.letGo = reason }
            return state.letGo == nil
        }
        serving.store(false, ordering: .releasing)
        guard first else { return }
        log(LogRecord(
            .error, "feed_let_go", [("reason", reason)],
            text: "this server cannot follow the database (\(reason)): letting its clients go (504 lagging), "
                + "refusing reads and writes, and reloading a snapshot"))
        letGoSubject.send(reason)
    }

    /// Reads a fresh snapshot and serves again from it; false when the connection failed meanwhile.
    private func reload(_ connection: PGConnection) -> Bool {
        state.withLock { $0.reloading = true }
        let timeout = connection.callTimeoutMillis
        connection.callTimeoutMillis = max(timeout, Self.snapshotTimeoutMillis)
        defer { connection.callTimeoutMillis = timeout }
        do throws(MemoError) {
            let (table, history) = try PostgresSchema.load(from: connection, historyCapacity: historyCapacity)
            storeState.reload(table: table, history: history)
            state.withLock { $0.carried = [:] }
        } catch {
            state.withLock { $0.reloading = false }
            link.lost(PGError(message: "cannot load a snapshot: \(error)", sqlState: nil, connectionLost: true))
            state.withLock { $0.connected = false }
            return false
        }
        applyKnown()
        state.withLock { state in
            state.letGo = nil
            state.reloading = false
            state.recovering = false
        }
        dueSince.store(0, ordering: .relaxed)
        serving.store(true, ordering: .releasing)
        log(LogRecord(
            .info, "feed_reloaded", [("revision", "\(storeState.revision)")],
            text: "reloaded a snapshot at revision \(storeState.revision); serving again"))
        _ = finishWaiters()
        return true
    }

    /// What the notifications that arrived brought, when they announced anything not applied yet.
    private enum Taken {
        /// Changes carried (applied as far as they run gap-free) or heads announced: what is left open waits for
        /// the payloads still to come, then a read.
        case announced
        /// A head without its sender's changes, or a notification that is not a payload: the table must be read.
        case due
    }

    /// Reads what arrived on the connection, raises `announced` to the heads it announces, and puts the changes
    /// other servers' payloads carried in the reorder buffer, applying those that come next; nil when nothing
    /// announced a revision not applied yet. This server's own notifications are read no further than their head
    /// and origin: the writer hands their changes over. A broken connection is dropped (the next turn reconnects
    /// and reads).
    private func takeNotifications(_ connection: inout PGConnection?, announced: inout UInt64) -> Taken? {
        guard let current = connection else { return nil }
        let payloads: [[UInt8]]
        do throws(PGError) {
            payloads = try current.notifications()
        } catch {
            lose(error, &connection)
            return nil
        }
        guard !payloads.isEmpty else { return nil }
        let applied = storeState.revision
        var taken: Taken?
        var carried: [Change] = []
        for payload in payloads {
            guard let head = FeedPayload.head(payload) else {
                taken = .due  // not a payload: read
                continue
            }
            guard head > applied else { continue }
            stats.saw(head: head)
            StageTrace.record(.woken, head)
            announced = max(announced, head)
            if taken == nil { taken = .announced }
            if FeedPayload.origin(payload) == stats.origin { continue }
            guard let changes = FeedPayload.parse(payload)?.changes else {
                taken = .due  // the sender's changes did not fit, or it sends the head alone: read
                continue
            }
            carried += changes.lazy.filter { $0.revision > applied }
        }
        if !carried.isEmpty {
            StageTrace.record(.carried, carried)
            state.withLock { state in
                for change in carried { state.carried[change.revision] = change }
            }
            applyKnown()
        }
        return taken
    }

    /// True when a revision up to the newest known to exist (`announced`, or the newest the writer handed over or
    /// a payload carried) is not applied: changes come before them that are still on their way.
    private func hasGap(below announced: UInt64) -> Bool {
        let applied = storeState.revision
        if announced > applied { return true }
        return state.withLock { state in !state.known.isEmpty || !state.carried.isEmpty }
    }

    /// Reads and applies every change after the applied revision, a page at a time, each page within the call
    /// deadline: a frozen backend, or no answer, is a lost connection.
    private func catchUp(_ connection: PGConnection) throws(PGError) -> ReadEnd {
        while true {
            applyKnown()
            let applied = storeState.revision
            stats.feedReads.add(1, ordering: .relaxed)
            let rows = try connection.execute(
                PostgresSQL.changesAfter, [.text(String(applied)), .text(String(Self.page))])
            guard rows.rowCount > 0 else {
                stats.feedProgressed()
                return .caughtUp
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
                return .belowHistory(
                    "it applied revision \(applied), but the database keeps only the changes after \(floor)")
            }
            storeState.apply(changes)
            if let last = changes.last { stats.saw(head: last.revision) }
            if changes.count < Self.page {
                stats.feedProgressed()
                return .caughtUp
            }
        }
    }

    /// Looks at the committed and durable heads (after a read that caught up, once every `recheckMillis`) and
    /// claims the commits that no claim covered since the last look: a write that committed after its server gave
    /// up on it (answered 505 while PostgreSQL was frozen, committed once it ran again), or whose server stopped
    /// between its commit and its claim. No feed reads past the durable head, and nothing else claims them until
    /// some later write's claim covers them, which on a quiet database is never: the change would stay unserved on
    /// every server. A claim in flight is not waited for: a second one costs a flush that the two share.
    /// - Returns: whether it claimed, so that the table is read again at once.
    private func claimUnclaimed(
        on connection: PGConnection, _ unclaimed: inout UInt64?
    ) throws(PGError) -> Bool {
        let rows = try connection.execute(PostgresSQL.heads, [])
        guard rows.rowCount == 1 else { return false }
        let heads = (committed: UInt64(rows.integer(0, 0)), durable: UInt64(rows.integer(0, 1)))
        guard heads.committed > heads.durable else {
            unclaimed = nil
            return false
        }
        // A commit already past the durable head at the last look, at least `recheckMillis` ago, is claimed; one
        // seen for the first time waits for the next look (its own claim is usually a few milliseconds away).
        guard let seen = unclaimed, seen > heads.durable else {
            unclaimed = heads.committed
            return false
        }
        unclaimed = heads.committed
        // A lost notification costs the other servers at most their next periodic read.
        _ = try PostgresClaimer.claimAndNotify(
            on: connection, notifying: FeedPayload.suffix(origin: stats.origin, changes: []))
        log(LogRecord(
            .info, "feed_claimed", [("after", "\(heads.durable)"), ("head", "\(heads.committed)")],
            text: "claimed the commits after revision \(heads.durable) up to \(heads.committed), which no server had "
                + "claimed for at least \(Self.seconds(recheckMillis)) s (a write given up after it was sent, or a server "
                + "stopped before its claim)"))
        return true
    }

    /// Applies the changes the writer handed over or payloads carried that come next, and forgets those already
    /// applied.
    private func applyKnown() {
        var next: [Change] = []
        var fromPayloads: UInt64 = 0
        state.withLock { state in
            guard !state.known.isEmpty || !state.carried.isEmpty else { return }
            var revision = storeState.revision
            while true {
                if let change = state.known[revision + 1] {
                    next.append(change)
                } else if let change = state.carried[revision + 1] {
                    next.append(change)
                    fromPayloads += 1
                } else {
                    break
                }
                revision += 1
            }
            if !state.known.isEmpty { state.known = state.known.filter { $0.key > revision } }
            if !state.carried.isEmpty { state.carried = state.carried.filter { $0.key > revision } }
        }
        guard !next.isEmpty else { return }
        // Counted before they are applied: whoever sees them applied sees them counted.
        if fromPayloads > 0 { stats.carriedChanges.add(fromPayloads, ordering: .relaxed) }
        storeState.apply(next)
        stats.feedProgressed()
    }

    /// Answers the waiters whose deadline passed, from the writer's thread: the feed's own thread may be held in
    /// a call for up to its deadline, and a committed write is answered within its storage timeout all the same.
    /// - Returns: the earliest deadline of the waiters left, when to call again.
    func expireWaiters() -> DispatchTime? {
        let now = DispatchTime.now()
        let (due, earliest) = state.withLock { state -> (Bool, DispatchTime?) in
            let earliest = state.waiters.reduce(nil as DispatchTime?) { min($0 ?? $1.deadline, $1.deadline) }
            return (earliest.map { $0 <= now } ?? false, earliest)
        }
        guard due else { return earliest }
        _ = finishWaiters()
        return state.withLock { state in
            state.waiters.reduce(nil as DispatchTime?) { min($0 ?? $1.deadline, $1.deadline) }
        }
    }

    /// Runs the waiters whose writes are applied (or out of time); returns whether the feed is stopping.
    private func finishWaiters() -> Bool {
        let applied = storeState.revision
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
