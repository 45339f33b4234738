internal import CMemoLinux
import Dispatch
import Foundation
import MemoModel
import MemoStore
import Synchronization

/// The server's durable store: every memo in a SQLite file (WAL, `synchronous=FULL`), and in memory for reads.
///
/// Writes go to one writer thread that takes every write waiting and commits them in one transaction (group
/// commit), so fifty writers pay for one fsync rather than fifty. A write completes only after its transaction
/// is committed; then it is applied to the in-memory table and published to watchers. The change history lives
/// in the file too, so that watchers can resume across a restart.
public final class SQLiteStore: StateBackedStore {
    /// The largest number of writes committed in one transaction.
    public static let maxBatch = 1024

    public let path: String
    public let storeState: StoreState
    private let queue = WriteQueue()
    private let clock: @Sendable () -> Int64
    private let transactions = Atomic<Int>(0)
    /// Held from before the database is opened until it is closed: one server per file.
    private let lock: StoreLock
    /// Room kept on the disk for deletes (`PATH-reserve`), released when the disk fills; writer thread only.
    private let reserve: DiskReserve
    /// The versions kept per memo and the trash's days.
    public let versions: VersionPolicy
    private let reader: SQLiteVersionReader
    /// How often the writer purges the trash of what is older than its days, in seconds.
    public static let purgeIntervalSeconds = 60

    /// The reserve's size when none is given: room for a checkpoint of the whole log and then the deletes of a
    /// few thousand small memos.
    public static let defaultReserveBytes = 4 << 20

    /// Opens or creates the store at `path`, creating its folder when missing, and loads every memo and the
    /// last `historyCapacity` changes. The store holds an exclusive lock on `PATH.lock` until it is closed.
    /// - Parameter reserveBytes: the room kept on the disk for deletes (`PATH-reserve`, allocated at opening when
    ///   the disk has that much free; 0 keeps none). When a write fails for lack of space the store releases it,
    ///   checkpoints the log into the database with that room, and from then on writes only deletes, refusing the
    ///   other writes with `storageFull` without trying them, until the disk has 1.5 times the reserve free. It
    ///   must be larger than the write-ahead log (at most about 1.25 MiB), or the checkpoint cannot finish.
    /// - Throws: `MemoError.storage` when the file cannot be opened or read, or another store (in any process)
    ///   holds it; then the message names the holder's pid.
    /// Why `folder` cannot be made, in the system's words: the errno of mkdir(2) for the first part that fails.
    private static func reason(creating folder: String) -> String {
        var path = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST { return String(cString: strerror(errno)) }
        }
        return "it could not be made"
    }

    public init(
        path: String,
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        reserveBytes: Int = SQLiteStore.defaultReserveBytes,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros },
        versions: VersionPolicy = .standard
    ) throws(MemoError) {
        self.path = path
        self.clock = clock
        self.versions = versions
        reserve = DiskReserve(path: path + "-reserve", size: reserveBytes)
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            do {
                // Owner only: the memos are nobody else's business on a shared machine.
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                // The system's words (errno), not Foundation's "The operation could not be completed".
                throw .storage("cannot create \(folder): \(Self.reason(creating: folder))")
            }
        }
        // Before the database is opened: a refused store must not touch the file (no WAL recovery, no schema).
        lock = try StoreLock(databasePath: path)
        // SQLite would create the file 0644; made here 0600 first, and SQLite gives its -wal and -shm files
        // the database's mode.
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 { Glibc.close(created) }
        // Before the database grows: a disk without room for it starts without one (and writes go on as usual).
        reserve.hold()
        let database = try SQLiteDatabase(path: path)
        let schema = try SQLiteSchema(database: database, historyCapacity: historyCapacity)
        let loaded = try schema.load()
        storeState = StoreState(table: loaded.table, history: loaded.history)
        // Loading freed as much as it keeps (SQLite's rows, the list the table was built from); glibc keeps freed
        // pages below its heap top resident unless asked, and a server's memory is measured from here.
        malloc_trim(0)
        // The writer thread owns the connection from here on.
        let writer = try SQLiteWriter(schema: schema, trimmed: loaded.trimmed, policy: versions) { [storeState] id in
            (try? storeState.read { table in table.memo(id)?.revision }) ?? nil
        }
        reader = try SQLiteVersionReader(path: path, keep: versions.keep)
        let thread = Thread { [self] in self.run(writer) }
        thread.name = "memo-sqlite-writer"
        thread.start()
    }

    // MARK: Writer

    private func run(_ writer: SQLiteWriter) {
        var nextPurge = DispatchTime.now()
        // Also due when the store's clock passed the interval (a test steps its clock by days).
        var nextPurgeMicros = clock()
        while true {
            let (batch, finished) = queue.take(limit: Self.maxBatch, waitingUntil: nextPurge)
            if !batch.isEmpty { commit(batch, with: writer) }
            if nextPurge <= .now() || clock() >= nextPurgeMicros {
                // A failed pass (a full disk) is tried again at the next.
                _ = try? writer.purgeTrash(deletedBefore: versions.purgeBefore(nowMicros: clock()))
                // The versions past the newest K of the memos changed since the last trim go in bulk.
                try? writer.sweepNow()
                nextPurge = .now() + .seconds(Self.purgeIntervalSeconds)
                nextPurgeMicros = clock() + Int64(Self.purgeIntervalSeconds) * 1_000_000
            }
            if finished { break }
        }
        // A closed file keeps no version past the newest K marked.
        try? writer.sweepNow()
        reader.close()
        writer.close()
        lock.release()
        storeState.close()
        queue.writerStopped()
    }

    private func commit(_ batch: [WriteQueue.Request], with writer: SQLiteWriter) {
        let ops = batch.map(\.op)
        // A full disk that has room again: the reserve is made again first, then every write goes through.
        if reserve.short, reserve.hold(withRoomToSpare: true) { reserve.short = false }
        var (results, full) = attempt(ops, with: writer)
        if full, !reserve.short {
            // The disk just filled. Release the reserve so that deletes have room, and write this batch's deletes.
            reserve.short = true
            reserve.release()
            // With that room a checkpoint can finish: it moves the log into the database file and empties it, so
            // the deletes need room only for their own pages (not for the next checkpoint's growth as well).
            writer.reclaimLog()
            (results, _) = attempt(ops, with: writer)
        }
        for (request, result) in zip(batch, results) { request.completion(result) }
    }

    /// Plans and writes `ops` (only the deletes while the disk is short of space; the others are refused).
    /// - Returns: each write's result, and whether the transaction failed for lack of space.
    private func attempt(_ ops: [WriteOp], with writer: SQLiteWriter) -> ([Result<WriteOutcome, MemoError>], Bool) {
        var results: [Result<WriteOutcome, MemoError>]
        if reserve.short {
            let deletes = ops.indices.filter { if case .delete = ops[$0] { true } else { false } }
            let refusal = MemoError.storageFull("\(path): database or disk is full; deletes still work, other writes "
                + "resume once the disk has \(reserve.resumeBytes) bytes free")
            results = Array(repeating: .failure(refusal), count: ops.count)
            for (index, result) in zip(deletes, storeState.plan(
                deletes.map { ops[$0] }, nowMicros: clock(), lookup: writer.lookup)) {
                results[index] = result
            }
        } else {
            results = storeState.plan(ops, nowMicros: clock(), lookup: writer.lookup)
        }
        let changes = results.compactMap { result -> Change? in
            if case .success(.change(let change)) = result { return change }
            return nil
        }
        do throws(MemoError) {
            try writer.write(changes, head: changes.last?.revision ?? storeState.revision)
            if !changes.isEmpty { transactions.add(1, ordering: .relaxed) }
            storeState.apply(changes)
            return (results, false)
        } catch {
            var failure = error
            if case .storageFull(let message) = error, reserve.short {
                failure = .storageFull(message + "; even a delete found no room (the reserve kept for deletes is "
                    + "used up or was never made): free space on the disk")
            }
            // Nothing of the batch is stored: every write that would have changed the store fails alike.
            for index in results.indices {
                if case .success(.change) = results[index] { results[index] = .failure(failure) }
            }
            if case .storageFull = error { return (results, true) }
            return (results, false)
        }
    }

    /// How many transactions have been committed since opening: with group commit, fewer than the writes.
    public var transactionCount: Int { transactions.load(ordering: .relaxed) }

    // MARK: ServingStore

    public func submit(
        _ ops: consuming [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void
    ) {
        queue.submit(ops, completion: completion)
    }

    public func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        let live = (try? storeState.read { table in table.memo(id)?.revision }) ?? nil
        reader.history(id: id, limit: limit, before: before, live: live, completion: completion)
    }

    public func trash(
        limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void
    ) {
        reader.trash(limit: limit, before: before, completion: completion)
    }

    /// Commits every write already submitted, closes the file and stops the watchers. Safe to call twice.
    public func close() { queue.closeAndWaitForWriter() }
}
