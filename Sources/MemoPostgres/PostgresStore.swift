import Dispatch
import Foundation
import MemoCore
import Synchronization

/// A server's store over a PostgreSQL database that several memo-servers share; the memos are in memory too,
/// for reads, subscriptions and lists.
///
/// Writes go to one writer thread and connection that sends everything waiting to the server-side function
/// `memo_write` in one round trip: it takes the head lock, plans each write against the shared tables and
/// numbers the changes. After the commit the writer hands the changes to the feed, which applies every server's
/// changes in revision order and notifies the other servers (a hint, in a transaction of its own); a write is
/// answered once it is applied here, so a client reading back on this server sees it. The feed, not the writer,
/// notifies the other servers, so that the writer's connection spends its time on writes only.
public final class PostgresStore: CoreBackedStore {
    /// The largest number of writes sent in one call.
    public static let maxBatch = 256

    public let core: StoreCore
    private let queue = WriteQueue()
    private let clock: @Sendable () -> Int64
    private let historyCapacity: Int
    private let writerLink: PostgresLink
    private let feed: PostgresFeed
    private let batches = Atomic<Int>(0)
    /// The URI given (with its password: `storeStatus` shows it without).
    let uri: String
    /// Batch sizes, commit times and the feed's progress, for `status`.
    let stats = PostgresStats()

    /// Connects to the database at `uri` (any libpq URI or connection string), creating the schema on first use,
    /// and loads the memos and the last `historyCapacity` changes in one snapshot.
    /// - Parameters:
    ///   - historyCapacity: the changes kept in memory and in the database; this server prunes older ones.
    ///   - recheckMillis: how often the feed reads the changes table when no notification came (a notification is
    ///     a hint that PostgreSQL drops while the feed's connection is down); tests set it long to see that a
    ///     notification alone brings another server's change.
    ///   - log: receives one line per connection transition.
    /// - Throws: `MemoError.storage` when PostgreSQL cannot be reached or its schema is newer than this binary.
    public init(
        uri: String,
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros },
        recheckMillis: Int = 1_000,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(MemoError) {
        self.clock = clock
        self.historyCapacity = historyCapacity
        self.uri = uri
        writerLink = PostgresLink(uri: uri, role: "writer", log: log)
        let feedLink = PostgresLink(uri: uri, role: "feed", log: log)
        let feedConnection: PGConnection
        let writer: PGConnection
        do {
            feedConnection = try feedLink.open(listening: false)
            try PostgresSchema.ensure(on: feedConnection)
            // LISTEN before the snapshot: a commit after the snapshot is then either in it or notified.
            try feedConnection.execute("LISTEN \(PostgresSQL.channel)")
            writer = try writerLink.open(listening: false)
        } catch let error as PGError {
            throw .storage("cannot connect to PostgreSQL: \(error.message)")
        } catch let error as MemoError {
            throw error
        } catch {
            throw .storage("cannot connect to PostgreSQL: \(error)")
        }
        let (table, history) = try PostgresSchema.load(from: feedConnection, historyCapacity: historyCapacity)
        core = StoreCore(table: table, history: history)
        feed = try PostgresFeed(
            core: core, link: feedLink, connection: feedConnection, recheckMillis: recheckMillis, stats: stats,
            log: log)
        let floor = history.oldestResumable
        let thread = Thread { [self] in self.run(writer, prunedUpTo: floor) }
        thread.name = "memo-pg-writer"
        thread.start()
    }

    /// How many batches reached PostgreSQL since opening.
    public var batchCount: Int { batches.load(ordering: .relaxed) }

    // MARK: Writer

    private func run(_ initial: PGConnection, prunedUpTo floor: UInt64) {
        var connection: PGConnection? = initial
        var prunedUpTo = floor
        var handedOver = core.revision
        while true {
            let (batch, finished) = queue.take(
                limit: Self.maxBatch, waitingUntil: connection == nil ? writerLink.nextAttempt : .distantFuture)
            if connection == nil { connection = writerLink.connect(listening: false) }
            if !batch.isEmpty {
                if let current = connection {
                    if !commit(batch, on: current, handedOver: &handedOver) { connection = nil }
                } else {
                    let error = MemoError.storage("PostgreSQL is unavailable: \(writerLink.lastError)")
                    for request in batch { request.completion(.failure(error)) }
                }
            }
            if let current = connection { prune(on: current, prunedUpTo: &prunedUpTo) }
            if finished { break }
        }
        feed.stop()
        core.close()
        queue.writerStopped()
    }

    /// Sends one batch; returns false when the connection broke.
    /// - Parameter handedOver: the newest revision this writer handed to the feed (its own changes and the others'
    ///   its calls returned), which the feed applies in order even when it has not yet: the call asks only for
    ///   the other servers' changes after it, not again for those the feed is still applying.
    private func commit(
        _ batch: [WriteQueue.Request], on connection: PGConnection, handedOver: inout UInt64
    ) -> Bool {
        if let reason = feed.behind {
            for request in batch { request.completion(.failure(.storage(reason))) }
            return true
        }
        var results = [Result<WriteOutcome, MemoError>?](repeating: nil, count: batch.count)
        var sent: [Int] = []
        for (index, request) in batch.enumerated() {
            do throws(MemoError) {
                if case .create(_, let content, _, _) = request.op { try MemoLimits.validate(content: content) }
                if case .update(_, let content, _) = request.op { try MemoLimits.validate(content: content) }
                sent.append(index)
            } catch {
                results[index] = .failure(error)
            }
        }
        var changes: [Change] = []
        var earlier: [Change] = []
        var healthy = true
        if !sent.isEmpty {
            do throws(PGError) {
                let started = PostgresStats.now()
                let rows = try connection.execute(
                    PostgresSQL.write(count: sent.count),
                    WriteCall.parameters(
                        sent.map { batch[$0].op }, clock(), after: max(core.revision, handedOver)))
                stats.batchCommitted(size: sent.count, nanos: PostgresStats.now() &- started)
                batches.add(1, ordering: .relaxed)
                earlier = WriteCall.earlierChanges(rows)
                for (row, index) in sent.enumerated() {
                    let result = WriteCall.result(of: batch[index].op, rows, earlier.count + row)
                    if case .success(.change(let change)) = result { changes.append(change) }
                    results[index] = result
                }
                StageTrace.record(.committed, changes)
                handedOver = max(handedOver, changes.last?.revision ?? 0, earlier.last?.revision ?? 0)
                stats.saw(head: handedOver)
            } catch {
                // A broken connection may have committed or not: never answer success, the client retries
                // creates by id and updates with their revision.
                if error.connectionLost {
                    writerLink.lost(error)
                    healthy = false
                }
                let message = error.connectionLost
                    ? "PostgreSQL connection lost during the write, its outcome is unknown: \(error.message)"
                    : "PostgreSQL refused the write: \(error.message)"
                for index in sent { results[index] = .failure(.storage(message)) }
            }
        }
        let final = results.map { $0! }
        let completions = batch.map(\.completion)
        feed.committed(changes, after: earlier) { applied in
            for (completion, result) in zip(completions, final) {
                if !applied, case .success(.change) = result {
                    completion(.failure(.storage("the write was committed but this server has not caught up yet")))
                } else {
                    completion(result)
                }
            }
        }
        return healthy
    }

    /// Deletes changes older than the history this server keeps, and stores the new floor, now and then.
    private func prune(on connection: PGConnection, prunedUpTo: inout UInt64) {
        let capacity = UInt64(historyCapacity)
        let head = core.revision
        guard head > prunedUpTo + capacity + max(64, capacity / 16) else { return }
        if let rows = try? connection.execute("SELECT memo_prune($1::bigint)", [.text(String(capacity))]),
            rows.rowCount == 1
        {
            prunedUpTo = UInt64(rows.integer(0, 0))
        }
    }

    // MARK: ServingStore

    public func submit(_ ops: [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void) {
        queue.submit(ops, completion: completion)
    }

    /// Sends every write already submitted, stops both connections and the watchers. Safe to call twice.
    public func close() { queue.closeAndWaitForWriter() }
}
