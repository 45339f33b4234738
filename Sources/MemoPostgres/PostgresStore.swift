internal import CMemoLinux
import Dispatch
import Foundation
import MemoDiagnostics
import MemoModel
import MemoStore
import Synchronization

/// A server's store over a PostgreSQL database that several memo-servers share; the memos are in memory too,
/// for reads, subscriptions and lists.
///
/// Writes go to one writer thread and connection that sends everything waiting to the server-side function
/// `memo_write` in one round trip: it takes the head lock, plans each write against the shared tables and
/// numbers the changes. The batch commits without waiting for its WAL flush, so that the head lock is free for
/// the other servers' batches while it flushes (their flushes then share `fsync`s), and the writer goes on to the
/// next batch at once: a claimer thread and connection of its own (`PostgresClaimer`) claims the committed batches
/// durable (`memo_durable`, a transaction that waits for the flush; one claim covers every batch committed before
/// it) and, in the same round trip, notifies the other servers' feeds (a hint, in a transaction of its own, so
/// that a full notification queue never fails a write). After the claim the claimer hands the changes to the
/// feed, which applies every server's changes in revision order, only up to what is claimed durable; a write is
/// answered once it is applied here, so a client reading back on this server sees it.
public final class PostgresStore: StateBackedStore {
    /// The largest number of writes sent in one call.
    public static let maxBatch = 256

    public let storeState: StoreState
    private let queue = WriteQueue()
    private let clock: @Sendable () -> Int64
    private let historyCapacity: Int
    private let storageTimeoutMillis: Int
    private let writerLink: PostgresLink
    private let feed: PostgresFeed
    private let claimer: PostgresClaimer
    private let batches = Atomic<Int>(0)
    /// The URI given (with its password: `storeStatus` shows it without).
    let uri: String
    /// Batch sizes, commit times and the feed's progress, for `status`.
    let stats = PostgresStats()
    /// The versions kept per memo and the trash's days (every server over one database should give the same).
    public let versions: VersionPolicy
    private let reader: PostgresVersionReader
    /// How often this server purges the trash of what is older than its days (under the head lock, one server at
    /// a time), in seconds.
    public static let purgeIntervalSeconds = 60

    /// Connects to the database at `uri` (any libpq URI or connection string), creating the schema on first use,
    /// and loads the memos and the last `historyCapacity` changes in one snapshot.
    /// - Parameters:
    ///   - historyCapacity: the changes kept in memory and in the database; this server prunes older ones.
    ///   - recheckMillis: how often the feed reads the changes table when no notification came (a notification is
    ///     a hint that PostgreSQL drops while the feed's connection is down); tests set it long to see that a
    ///     notification alone brings another server's change.
    ///   - storageTimeoutMillis: the most a write waits for PostgreSQL, counted from its submission, whatever
    ///     PostgreSQL does (frozen, partitioned, lock-queued); also the deadline of every other call.
    ///   - maxFeedLagMillis: how long the feed may be unable to confirm that it holds every change before this
    ///     server lets its clients go and reloads (see `readiness`).
    ///   - gapWaitMillis: how long the feed waits for the notification payload that fills a gap before it reads the
    ///     changes table (`PostgresFeed`); tests set it long to see that payloads alone bring every change.
    ///   - log: receives one record per connection transition.
    /// - Throws: `MemoError.storage` when PostgreSQL cannot be reached or its schema is newer than this binary.
    public init(
        uri: String,
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros },
        recheckMillis: Int = 1_000,
        storageTimeoutMillis: Int = PostgresStore.defaultStorageTimeoutMillis,
        maxFeedLagMillis: Int = PostgresStore.defaultMaxFeedLagMillis,
        versions: VersionPolicy = .standard,
        gapWaitMillis: Int = PostgresStore.defaultGapWaitMillis,
        log: @escaping @Sendable (LogRecord) -> Void = { _ in }
    ) throws(MemoError) {
        self.clock = clock
        self.versions = versions
        reader = PostgresVersionReader(uri: uri, keep: versions.keep, timeoutMillis: storageTimeoutMillis, log: log)
        self.historyCapacity = historyCapacity
        self.storageTimeoutMillis = storageTimeoutMillis
        self.uri = uri
        writerLink = PostgresLink(uri: uri, role: "writer", timeoutMillis: storageTimeoutMillis, log: log)
        let feedLink = PostgresLink(uri: uri, role: "feed", timeoutMillis: storageTimeoutMillis, log: log)
        let claimLink = PostgresLink(uri: uri, role: "claimer", timeoutMillis: storageTimeoutMillis, log: log)
        let feedConnection: PGConnection
        let writer: PGConnection
        let claimConnection: PGConnection
        do {
            feedConnection = try feedLink.open(listening: false)
            // Creating the schema and reading the first snapshot may take long on a large database.
            feedConnection.callTimeoutMillis = max(storageTimeoutMillis, PostgresFeed.snapshotTimeoutMillis)
            try PostgresSchema.ensure(on: feedConnection, keepsVersions: versions.keep > 0)
            // LISTEN before the snapshot: a commit after the snapshot is then either in it or notified.
            try feedConnection.execute("LISTEN \(PostgresSQL.channel)")
            writer = try writerLink.open(listening: false)
            claimConnection = try claimLink.open(listening: false)
        } catch let error as PGError {
            throw .storage("cannot connect to PostgreSQL: \(error.message)")
        } catch let error as MemoError {
            throw error
        } catch {
            throw .storage("cannot connect to PostgreSQL: \(error)")
        }
        let (table, history) = try PostgresSchema.load(from: feedConnection, historyCapacity: historyCapacity)
        feedConnection.callTimeoutMillis = feedLink.timeoutMillis
        storeState = StoreState(table: table, history: history)
        // Loading freed as much as it keeps (libpq's rows, the list the table was built from); glibc keeps freed
        // pages below its heap top resident unless asked, and a server's memory is measured from here.
        malloc_trim(0)
        feed = try PostgresFeed(
            storeState: storeState, link: feedLink, connection: feedConnection, historyCapacity: historyCapacity,
            recheckMillis: recheckMillis, maxLagMillis: maxFeedLagMillis, gapWaitMillis: gapWaitMillis, stats: stats,
            log: log)
        claimer = PostgresClaimer(link: claimLink, connection: claimConnection, feed: feed, stats: stats)
        let floor = history.oldestResumable
        let handoff = PGConnectionHandoff(writer)
        let thread = Thread { [self] in self.run(handoff, prunedUpTo: floor) }
        thread.name = "memo-pg-writer"
        thread.start()
    }

    /// How long a feed waits for the payload that fills a gap before it reads (`PostgresFeed`): another server's
    /// notification that announces a head past a gap usually comes just before the one that carries it.
    public static let defaultGapWaitMillis = 2

    /// `--storage-timeout`'s default: well under the client's default timeout (10 s).
    public static let defaultStorageTimeoutMillis = 5_000
    /// `--max-feed-lag`'s default.
    public static let defaultMaxFeedLagMillis = 5_000

    /// How many batches reached PostgreSQL since opening.
    public var batchCount: Int { batches.load(ordering: .relaxed) }

    /// How many durability claims reached PostgreSQL since opening: one flush each, covering every batch committed
    /// before it (so fewer than the batches when the writer sent batches while a claim waited for its flush).
    public var claimCount: Int { claimer.claimCount }

    /// Ready unless this server cannot follow the database: its feed lags by more than its bound (a read of the
    /// changes table due for longer, even one still waiting for its answer) or fell below the retained history (it
    /// then lets its clients go and reloads, once a waiting read's deadline has ended the wait). While not ready it refuses writes and
    /// reads (501) rather than serve what it knows may be stale.
    public var readiness: StoreReadiness { feed.readiness }

    /// Calls `handler` once each time this server finds that it cannot follow the database, before it reloads,
    /// with the reason: the server sends every connection going-away 504 `lagging`.
    public func observeLetGo(_ handler: @escaping @Sendable (String) -> Void) -> Subscription {
        feed.observeLetGo(handler)
    }

    // MARK: Writer

    private func run(_ initial: PGConnectionHandoff, prunedUpTo floor: UInt64) {
        var connection: PGConnection? = initial.take()
        var prunedUpTo = floor
        var handedOver = storeState.revision
        // The earliest deadline of a committed write waiting to be applied here: it is answered then at the latest.
        var waiterDeadline: DispatchTime?
        var nextPurge = DispatchTime.now()
        // Also due when the store's clock passed the interval (a test steps its clock by days).
        var nextPurgeMicros = clock()
        while true {
            let (batch, finished) = queue.take(
                limit: Self.maxBatch,
                waitingUntil: min(connection == nil ? writerLink.nextAttempt : nextPurge,
                                  waiterDeadline ?? .distantFuture))
            if !batch.isEmpty {
                // Each write is answered within the storage timeout of its submission: the batch's deadline is its
                // oldest write's.
                let oldest = batch.map(\.submitted.uptimeNanoseconds).min()!
                let deadline = DispatchTime(uptimeNanoseconds: oldest) + .milliseconds(storageTimeoutMillis)
                // Two tries at most: the second only when the first found the connection dead before PostgreSQL
                // got the batch (an idle connection closed by an administrator, a restart): that write is not lost
                // to a connection nobody was using, it goes on a fresh one.
                var attempt = 0
                while true {
                    attempt += 1
                    if let current = connection, !current.checkIdle() {
                        writerLink.lost(PGError(
                            message: "the idle connection was closed", sqlState: nil, connectionLost: true))
                        connection = nil
                    }
                    if connection == nil { connection = writerLink.connect(listening: false, until: deadline) }
                    guard let current = connection else {
                        let error = MemoError.storage("PostgreSQL is unavailable: \(writerLink.lastError)")
                        for request in batch { request.completion(.failure(error)) }
                        break
                    }
                    switch commit(batch, on: current, until: deadline, retry: attempt == 1, handedOver: &handedOver) {
                    case .done:
                        break
                    case .broken:
                        connection = nil
                    case .notSent:
                        connection = nil
                        continue
                    }
                    break
                }
            } else if connection == nil {
                connection = writerLink.connect(listening: false)
            }
            if let current = connection, !prune(on: current, prunedUpTo: &prunedUpTo) { connection = nil }
            if let current = connection, nextPurge <= .now() || clock() >= nextPurgeMicros {
                if !purge(on: current) { connection = nil }
                nextPurge = .now() + .seconds(Self.purgeIntervalSeconds)
                nextPurgeMicros = clock() + Int64(Self.purgeIntervalSeconds) * 1_000_000
            }
            waiterDeadline = feed.expireWaiters()
            if finished { break }
        }
        // The batches committed last are claimed and handed to the feed before it stops.
        claimer.stop()
        feed.stop()
        reader.close()
        storeState.close()
        queue.writerStopped()
    }

    /// How a batch went for its connection.
    private enum CommitEnd {
        /// Answered, and the connection is usable.
        case done
        /// Answered, and the connection is gone.
        case broken
        /// Not answered: the connection was found broken before PostgreSQL got the statement; try another.
        case notSent
    }

    /// Sends one batch and answers it, unless it could not be sent and `retry` allows another try.
    /// - Parameter handedOver: the newest revision this writer handed to the feed (its own changes and the others'
    ///   its calls returned), which the feed applies in order even when it has not yet: the call asks only for
    ///   the other servers' changes after it, not again for those the feed is still applying.
    private func commit(
        _ batch: [WriteQueue.Request], on connection: PGConnection, until deadline: DispatchTime, retry: Bool,
        handedOver: inout UInt64
    ) -> CommitEnd {
        if let reason = feed.behind {
            for request in batch { request.completion(.failure(.storage(reason))) }
            return .done
        }
        var results = [Result<WriteOutcome, MemoError>?](repeating: nil, count: batch.count)
        var sent: [Int] = []
        for (index, request) in batch.enumerated() {
            do throws(MemoError) {
                try request.op.validateArguments()  // the content's size, a create's dates
                sent.append(index)
            } catch {
                results[index] = .failure(error)
            }
        }
        var end = CommitEnd.done
        let left = Int((deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1_000_000)
        if !sent.isEmpty && (deadline <= .now() || left < Self.minimumSendMillis) {
            let error = MemoError.storage(
                "PostgreSQL did not take the write within the storage timeout (\(storageTimeoutMillis) ms); "
                    + "nothing was changed")
            for index in sent { results[index] = .failure(error) }
        } else if !sent.isEmpty {
            do throws(PGError) {
                try fitLimits(on: connection, leftMillis: left, deadline: deadline)
                let started = PostgresStats.now()
                // The batch commits without waiting for its flush; the claimer makes it durable (and tells the
                // other servers) while this thread sends the next batch: nothing is answered or handed on before
                // the claim.
                let ops = sent.map { batch[$0].op }
                let sentAt = DispatchTime.now()
                var (earlier, sentResults) = try WriteCall.write(
                    ops, on: connection, nowMicros: clock(), after: max(storeState.revision, handedOver),
                    policy: versions, deadline: deadline)
                batches.add(1, ordering: .relaxed)
                var changes: [Change] = []
                for result in sentResults { if case .success(.change(let change)) = result { changes.append(change) } }
                if StageTrace.path != nil {
                    for (row, result) in sentResults.enumerated() {
                        guard case .success(.change(let change)) = result else { continue }
                        StageTrace.record(.submitted, change.revision, at: batch[sent[row]].submitted)
                        StageTrace.record(.sent, change.revision, at: sentAt)
                    }
                    StageTrace.record(.returned, changes)
                }
                // Stale updates that asked to be merged (PostgresMerge): further calls after this one.
                let merging = PostgresMerge.merge(
                    ops, &sentResults, on: connection, nowMicros: clock(),
                    after: max(storeState.revision, handedOver, changes.last?.revision ?? 0, earlier.last?.revision ?? 0),
                    policy: versions, deadline: deadline, minimumSendMillis: Self.minimumSendMillis,
                    timeoutMillis: storageTimeoutMillis)
                changes += merging.changes
                earlier += merging.earlier
                for (row, index) in sent.enumerated() { results[index] = sentResults[row] }
                if let error = merging.failure, error.connectionLost {
                    writerLink.lost(error)
                    end = .broken
                }
                handedOver = max(handedOver, changes.last?.revision ?? 0, earlier.last?.revision ?? 0)
                stats.saw(head: handedOver)
                claimer.claim(PostgresClaimer.Batch(
                    changes: changes, earlier: earlier, results: results.map { $0! }, sent: sent,
                    completions: batch.map(\.completion), deadline: deadline, started: started))
                return end
            } catch {
                if error.connectionLost {
                    writerLink.lost(error)
                    end = .broken
                    if !error.sent && retry { return .notSent }
                }
                let failure = Self.failure(error, timeoutMillis: storageTimeoutMillis)
                for index in sent { results[index] = .failure(failure) }
            }
        }
        // Nothing was committed: answered at once.
        for (request, result) in zip(batch, results) { request.completion(result!) }
        return end
    }

    /// Below this many milliseconds left, a batch is refused unsent (501) rather than sent to be cut off (505).
    static let minimumSendMillis = 50

    /// Makes PostgreSQL give up on its own (a definite rollback, 501) before our deadline cuts the statement off
    /// (505): a batch that waited behind a slow one has less time left than the session's limits assume, so they
    /// are narrowed for it (one more round trip, only then), and widened again once a batch has its full time.
    private func fitLimits(on connection: PGConnection, leftMillis: Int, deadline: DispatchTime) throws(PGError) {
        let full = leftMillis * 100 >= storageTimeoutMillis * 85
        let wanted: Int? = full ? nil : leftMillis
        guard connection.narrowedLimitsMillis != wanted else { return }
        let settings = PostgresLink.writerTimeouts(wanted ?? storageTimeoutMillis).dropFirst(2)
        do throws(PGError) {
            try connection.execute(String(settings), deadline: deadline)
        } catch {
            // Whatever happened to the settings, the write itself was not sent.
            var unsent = error
            unsent.sent = false
            throw unsent
        }
        connection.narrowedLimitsMillis = wanted
    }

    /// What a failed statement tells its writes: refused (PostgreSQL rolled it back, or never got it: nothing
    /// changed, 501), or outcome unknown (the statement was sent, then the connection broke or our deadline
    /// passed before its answer: its commit may have happened, 505).
    static func failure(_ error: PGError, timeoutMillis: Int) -> MemoError {
        guard error.connectionLost else { return .storage("PostgreSQL refused the write: \(error.message)") }
        guard error.sent else {
            return .storage("PostgreSQL connection lost before the write was sent, nothing was changed: \(error.message)")
        }
        if error.timedOut {
            return .outcomeUnknown(
                "PostgreSQL did not answer the write within the storage timeout (\(timeoutMillis) ms); "
                    + "it may or may not have been committed")
        }
        return .outcomeUnknown(
            "PostgreSQL connection lost after the write was sent; it may or may not have been committed: "
                + error.message)
    }

    /// Deletes changes older than the history this server keeps, and stores the new floor, now and then.
    /// - Returns: false when the connection broke (or timed out) meanwhile.
    private func prune(on connection: PGConnection, prunedUpTo: inout UInt64) -> Bool {
        let capacity = UInt64(historyCapacity)
        let head = storeState.revision
        guard head > prunedUpTo + capacity + max(64, capacity / 16) else { return true }
        do throws(PGError) {
            let rows = try connection.execute("SELECT memo_prune($1::bigint)", [.text(String(capacity))])
            if rows.rowCount == 1 { prunedUpTo = UInt64(rows.integer(0, 0)) }
            return true
        } catch {
            if error.connectionLost { writerLink.lost(error) }
            return !error.connectionLost
        }
    }

    /// Purges the trash of the memos deleted longer ago than the policy's days, with their versions; with
    /// `--versions 0` also drops the versions another server (with a K above 0) kept since.
    /// - Returns: false when the connection broke (or timed out) meanwhile.
    private func purge(on connection: PGConnection) -> Bool {
        do throws(PGError) {
            _ = try connection.execute(
                "SELECT memo_purge($1::bigint)", [.text(String(versions.purgeBefore(nowMicros: clock())))])
            if versions.keep == 0 { _ = try connection.execute("SELECT memo_drop_versions()", []) }
            return true
        } catch {
            if error.connectionLost { writerLink.lost(error) }
            return !error.connectionLost
        }
    }

    // MARK: ServingStore

    public func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        reader.history(id: id, limit: limit, before: before, completion: completion)
    }

    public func trash(
        limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void
    ) {
        reader.trash(limit: limit, before: before, completion: completion)
    }

    public func submit(
        _ ops: consuming [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void
    ) {
        queue.submit(ops, completion: completion)
    }

    /// Sends every write already submitted, stops the writer, the claimer, the feed and the watchers. Safe to call
    /// twice.
    public func close() { queue.closeAndWaitForWriter() }
}
