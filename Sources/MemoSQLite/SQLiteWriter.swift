import Foundation
import MemoModel
/// Writes committed batches.
///
/// Each change is one row written with its content; an update or a delete also clears the `current` mark of the
/// memo's previous row (found by its revision, which the store's table knows), or deletes that row when it is
/// already older than the history.
// @unchecked Sendable: the store makes it on the opening thread and hands it to its writer thread, the only
// thread that touches it (and its connection) from then on.
final class SQLiteWriter: @unchecked Sendable {
    private let schema: SQLiteSchema
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    private let insertChange: SQLiteStatement
    private let retire: SQLiteStatement
    private let drop: SQLiteStatement
    private let setHead: SQLiteStatement
    private let trim: SQLiteStatement
    private var writesSinceTrim = 0
    /// No row at or below this revision is one that is not current (see `SQLiteSchema.Loaded.trimmed`).
    private var trimmed: UInt64
    /// The revision of each memo as the transaction in progress left it.
    private var pendingRevisions: [UUIDKey: UInt64] = [:]
    /// The revision of a memo as the store's table holds it (before the transaction in progress).
    private let committedRevision: (UUID) -> UInt64?

    init(
        schema: SQLiteSchema, trimmed: UInt64, committedRevision: @escaping (UUID) -> UInt64?
    ) throws(MemoError) {
        self.schema = schema
        self.trimmed = trimmed
        self.committedRevision = committedRevision
        let db = schema.database
        begin = try db.prepare("BEGIN IMMEDIATE")
        commit = try db.prepare("COMMIT")
        rollback = try db.prepare("ROLLBACK")
        insertChange = try db.prepare("""
            INSERT INTO changes (revision, current, kind, id, insert_us, update_us, content)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        retire = try db.prepare("UPDATE changes SET current = 0 WHERE revision = ? AND current = 1")
        drop = try db.prepare("DELETE FROM changes WHERE revision = ? AND current = 1")
        setHead = try db.prepare("UPDATE meta SET value = ? WHERE key = 'head'")
        trim = try db.prepare("DELETE FROM changes WHERE revision > ? AND revision <= ? AND current = 0")
    }

    /// Commits `changes` in one transaction; on any error nothing of them is stored.
    func write(_ changes: [Change], head: UInt64) throws(MemoError) {
        guard !changes.isEmpty else { return }
        try begin.run()
        var trimmedNow = trimmed
        do throws(MemoError) {
            for change in changes { try write(change) }
            writesSinceTrim += changes.count
            if writesSinceTrim >= 1024, head > UInt64(schema.historyCapacity) {
                writesSinceTrim = 0
                // The head is recorded with each trim, so that it survives even a history emptied by hand.
                setHead.bind(1, Int64(head))
                try setHead.run()
                let cutoff = head - UInt64(schema.historyCapacity)
                if cutoff > trimmed {
                    // Only the revisions since the last trim are scanned: the current rows below it are skipped.
                    trim.bind(1, Int64(trimmed))
                    trim.bind(2, Int64(cutoff))
                    try trim.run()
                    trimmedNow = cutoff
                }
            }
            try commit.run()
            trimmed = trimmedNow
            pendingRevisions.removeAll(keepingCapacity: true)
        } catch {
            pendingRevisions.removeAll(keepingCapacity: true)
            try? rollback.run()
            if case .storageFull = error { reclaimLog() }
            throw error
        }
    }

    /// After a full disk: copies the write-ahead log into the database and truncates it to nothing. The log only
    /// grows until a checkpoint, and it keeps its size after one, so on a small disk it holds space that only a
    /// completed checkpoint gives back; when this checkpoint cannot finish either, the next write tries again.
    func reclaimLog() {
        try? schema.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    private func write(_ change: Change) throws(MemoError) {
        let memo = change.memo
        if change.kind != .created { try retirePrevious(of: memo.id) }
        insertChange.bind(1, Int64(change.revision))
        insertChange.bind(2, change.kind == .deleted ? 0 : 1)
        insertChange.bind(3, Int64(change.kind.rawValue))
        insertChange.bind(4, memo.id.bytes)
        insertChange.bind(5, memo.insertMicros)
        insertChange.bind(6, memo.updateMicros)
        insertChange.bind(7, memo.content)
        try insertChange.run()
        pendingRevisions[UUIDKey(memo.id)] = change.revision
    }

    /// The memo's row so far stops being its current one: it stays as history, or goes when older than that.
    private func retirePrevious(of id: UUID) throws(MemoError) {
        guard let previous = pendingRevisions[UUIDKey(id)] ?? committedRevision(id) else {
            throw .storage("\(schema.database.path): no row for memo \(id.uuidString.lowercased())")
        }
        let statement = previous <= trimmed ? drop : retire
        statement.bind(1, Int64(previous))
        try statement.run()
        guard schema.database.changedRows == 1 else {
            throw .storage("\(schema.database.path): no current row \(previous) for memo \(id.uuidString.lowercased())")
        }
    }

    func close() {
        schema.database.close()
    }
}
