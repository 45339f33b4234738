import Dispatch
import Foundation
import MemoDiagnostics
import MemoModel
import Synchronization

/// The thread and connection that make a server's committed batches durable, so that its writer never waits for a
/// flush: the writer's batches commit without waiting for their WAL flush (`PostgresSQL.write`) and come here in
/// commit order; each claim (`PostgresSQL.durable`, committed synchronously) covers every batch committed before
/// it was sent, however many, and the other servers' notification follows it in the same round trip, carrying
/// this server's changes the claim covers when they fit (`FeedPayload`). While a
/// claim waits for its flush, the writer sends the next batches (batch K+1 is planned while batch K flushes), and
/// the next claim covers all of them in one flush.
///
/// Nothing is answered or handed to the feed before a claim covers it; batches are handed to the feed in the order
/// they committed. A claim that fails or gets no answer by the earliest deadline of the batches it covers
/// leaves their outcome unknown (505): they are committed, but perhaps not durable.
final class PostgresClaimer: Sendable {
    /// A batch the writer committed, waiting for a claim.
    struct Batch: Sendable {
        /// This server's changes, in revision order, and the other servers' that its calls returned before them.
        var changes: [Change]
        var earlier: [Change]
        /// One result per write of the batch, and the indexes of those sent to PostgreSQL (their outcome becomes
        /// unknown when the claim fails).
        var results: [Result<WriteOutcome, MemoError>]
        var sent: [Int]
        var completions: [@Sendable (Result<WriteOutcome, MemoError>) -> Void]
        var deadline: DispatchTime
        /// When the batch's first call was sent (`PostgresStats.now()`), for the commit time in `status`.
        var started: UInt64
    }

    private struct State {
        var batches: [Batch] = []
        var stopping = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let link: PostgresLink
    private let feed: PostgresFeed
    private let stats: PostgresStats
    private let claims = Atomic<Int>(0)

    init(link: PostgresLink, connection: PGConnection, feed: PostgresFeed, stats: PostgresStats) {
        self.link = link
        self.feed = feed
        self.stats = stats
        let handoff = PGConnectionHandoff(connection)
        let thread = Thread { [self] in self.run(handoff) }
        thread.name = "memo-pg-claimer"
        thread.start()
    }

    /// How many claims reached PostgreSQL since opening.
    var claimCount: Int { claims.load(ordering: .relaxed) }

    /// Queues a committed batch for the next claim.
    func claim(_ batch: Batch) {
        state.withLock { $0.batches.append(batch) }
        wake.signal()
    }

    /// Claims and hands on every batch queued, then stops the thread; returns when it has stopped.
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        stopped.wait()
    }

    private func run(_ initial: PGConnectionHandoff) {
        var connection: PGConnection? = initial.take()
        while true {
            let (batches, stopping) = state.withLock { state in
                defer { state.batches = [] }
                return (state.batches, state.stopping)
            }
            if batches.isEmpty {
                if stopping { break }
                // The feed's own thread may be held in a call until its deadline: the waiters of answered-late
                // writes are expired from here (and from the writer) all the same.
                let waiterDeadline = feed.expireWaiters()
                _ = wake.wait(timeout: waiterDeadline ?? .now() + .seconds(1))
                continue
            }
            let deadline = batches.map(\.deadline).min()!
            // The other servers' feeds apply these without a read (`FeedPayload`): built here, from what the
            // claim covers, so that PostgreSQL runs no query for it.
            let mine = batches.count == 1 ? batches[0].changes : batches.flatMap(\.changes)
            let suffix = FeedPayload.suffix(origin: stats.origin, changes: mine)
            StageTrace.record(.claimed, mine)
            switch claim(on: &connection, until: deadline, notifying: suffix) {
            case .success(let notified):
                claims.add(1, ordering: .relaxed)
                let now = PostgresStats.now()
                for batch in batches {
                    stats.batchCommitted(size: batch.sent.count, nanos: now &- batch.started)
                    StageTrace.record(.committed, batch.changes)
                }
                // A notification lost (a full queue) costs the others at most their periodic read.
                if notified, let last = batches.last(where: { !$0.changes.isEmpty })?.changes.last {
                    StageTrace.record(.notified, last.revision)
                }
                for batch in batches {
                    let completions = batch.completions
                    let results = batch.results
                    // Answered once applied here, so that a read on this server sees it; a commit this server's
                    // feed has not applied by the deadline is answered all the same: it is durable, and a server
                    // that cannot follow stops serving reads (see `readiness`).
                    let changes = batch.changes
                    feed.committed(changes, after: batch.earlier, deadline: batch.deadline) { _ in
                        StageTrace.record(.answered, changes)
                        for (completion, result) in zip(completions, results) { completion(result) }
                    }
                }
            case .failure(let error):
                let failure = MemoError.outcomeUnknown(
                    "PostgreSQL committed the write but did not confirm it durable: \(error.message)")
                for batch in batches {
                    var results = batch.results
                    for index in batch.sent { results[index] = .failure(failure) }
                    for (completion, result) in zip(batch.completions, results) { completion(result) }
                }
            }
        }
        stopped.signal()
    }

    /// The claim (`PostgresSQL.durable`) and, after it in the same round trip, the notification the feeds wait for
    /// (`PostgresSQL.notifyDurable`, the durable head then `suffix`): what every claim sends, this claimer's and a
    /// feed's for a commit nobody claimed.
    /// - Returns: how the notification went; the claim stands either way.
    /// - Throws: the claim's error.
    static func claimAndNotify(
        on connection: PGConnection, notifying suffix: String, prepared: Bool = false, deadline: DispatchTime? = nil
    ) throws(PGError) -> Result<PGResult, PGError> {
        let (_, following) = try connection.execute(
            PostgresSQL.durable, [], then: [(PostgresSQL.notifyDurable, [.text(suffix)])], prepared: prepared,
            deadline: deadline)
        return following[0]
    }

    /// Claims durable everything committed so far and notifies the other servers, in one round trip; a
    /// connection found dead before the claim was sent is replaced once.
    /// - Returns: whether the notification went out, or why the claim failed.
    private func claim(
        on connection: inout PGConnection?, until deadline: DispatchTime, notifying suffix: String
    ) -> Result<Bool, PGError> {
        var attempt = 0
        while true {
            attempt += 1
            if let current = connection, !current.checkIdle() {
                link.lost(PGError(message: "the idle connection was closed", sqlState: nil, connectionLost: true))
                connection = nil
            }
            if connection == nil { connection = link.connect(listening: false, until: deadline) }
            guard let current = connection else {
                return .failure(PGError(
                    message: "PostgreSQL is unavailable: \(link.lastError)", sqlState: nil, connectionLost: true))
            }
            do throws(PGError) {
                switch try Self.claimAndNotify(on: current, notifying: suffix, prepared: true, deadline: deadline) {
                case .success:
                    return .success(true)
                case .failure(let error):
                    // The claim stands; only the hint is lost (the others read at least every second).
                    if error.connectionLost {
                        link.lost(error)
                        connection = nil
                    }
                    return .success(false)
                }
            } catch {
                if error.connectionLost {
                    link.lost(error)
                    connection = nil
                    if !error.sent && attempt == 1 { continue }
                }
                return .failure(error)
            }
        }
    }
}
