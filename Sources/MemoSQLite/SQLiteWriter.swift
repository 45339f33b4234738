import Foundation
import MemoCore

/// Writes committed batches.
// @unchecked Sendable: the store makes it on the opening thread and hands it to its writer thread, the only
// thread that touches it (and its connection) from then on.
final class SQLiteWriter: @unchecked Sendable {
    private let schema: SQLiteSchema
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    private let insertMemo: SQLiteStatement
    private let updateMemo: SQLiteStatement
    private let deleteMemo: SQLiteStatement
    private let insertChange: SQLiteStatement
    private let setHead: SQLiteStatement
    private let trim: SQLiteStatement
    private var writesSinceTrim = 0
    /// The rowid of every live memo's row.
    private var rowids: [UUIDKey: Int64] = [:]
    /// Rowids made or dropped by the transaction in progress (nil: dropped), merged once it commits.
    private var pendingRowids: [UUIDKey: Int64?] = [:]

    /// - Parameter rowids: the rowid of every memo's row, as `SQLiteSchema.load` read them.
    init(schema: SQLiteSchema, rowids: [UUIDKey: Int64]) throws(MemoError) {
        self.schema = schema
        self.rowids = rowids
        let db = schema.database
        begin = try db.prepare("BEGIN IMMEDIATE")
        commit = try db.prepare("COMMIT")
        rollback = try db.prepare("ROLLBACK")
        insertMemo = try db.prepare(
            "INSERT INTO memos (id, content, insert_us, update_us, revision) VALUES (?, ?, ?, ?, ?)")
        updateMemo = try db.prepare("UPDATE memos SET content = ?, update_us = ?, revision = ? WHERE rowid = ?")
        deleteMemo = try db.prepare("DELETE FROM memos WHERE rowid = ?")
        insertChange = try db.prepare(
            "INSERT INTO changes (revision, kind, id, content, insert_us, update_us) VALUES (?, ?, ?, ?, ?, ?)")
        setHead = try db.prepare("UPDATE meta SET value = ? WHERE key = 'head'")
        trim = try db.prepare("DELETE FROM changes WHERE revision <= ?")
    }

    /// Commits `changes` in one transaction; on any error nothing of them is stored.
    func write(_ changes: [Change], head: UInt64) throws(MemoError) {
        guard !changes.isEmpty else { return }
        try begin.run()
        do throws(MemoError) {
            for change in changes { try write(change) }
            writesSinceTrim += changes.count
            if writesSinceTrim >= 1024, head > UInt64(schema.historyCapacity) {
                writesSinceTrim = 0
                // The head is recorded with each trim, so that it survives even a history emptied by hand.
                setHead.bind(1, Int64(head))
                try setHead.run()
                trim.bind(1, Int64(head - UInt64(schema.historyCapacity)))
                try trim.run()
            }
            try commit.run()
            for (id, rowid) in pendingRowids { rowids[id] = rowid }
            pendingRowids.removeAll(keepingCapacity: true)
        } catch {
            pendingRowids.removeAll(keepingCapacity: true)
            try? rollback.run()
            if case .storageFull = error { reclaimLog() }
            throw error
        }
    }

    /// After a full disk: copies the write-ahead log into the database and truncates it to nothing. The log only
    /// grows until a checkpoint, and it keeps its size after one, so on a small disk it holds space that only a
    /// completed checkpoint gives back; when this checkpoint cannot finish either, the next write tries again.
    private func reclaimLog() {
        try? schema.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    private func write(_ change: Change) throws(MemoError) {
        let memo = change.memo
        let id = memo.id.bytes
        switch change.kind {
        case .created:
            insertMemo.bind(1, id)
            insertMemo.bind(2, memo.content)
            insertMemo.bind(3, memo.insertMicros)
            insertMemo.bind(4, memo.updateMicros)
            insertMemo.bind(5, Int64(memo.revision))
            try insertMemo.run()
            pendingRowids[UUIDKey(memo.id)] = .some(schema.database.lastInsertRowid)
        case .updated:
            updateMemo.bind(1, memo.content)
            updateMemo.bind(2, memo.updateMicros)
            updateMemo.bind(3, Int64(memo.revision))
            updateMemo.bind(4, try rowid(of: memo.id))
            try updateMemo.run()
        case .deleted:
            deleteMemo.bind(1, try rowid(of: memo.id))
            try deleteMemo.run()
            pendingRowids[UUIDKey(memo.id)] = .some(nil)
        }
        insertChange.bind(1, Int64(change.revision))
        insertChange.bind(2, Int64(change.kind.rawValue))
        insertChange.bind(3, id)
        insertChange.bind(4, memo.content)
        insertChange.bind(5, memo.insertMicros)
        insertChange.bind(6, memo.updateMicros)
        try insertChange.run()
    }

    private func rowid(of id: UUID) throws(MemoError) -> Int64 {
        if let pending = pendingRowids[UUIDKey(id)] {
            if let pending { return pending }
        } else if let rowid = rowids[UUIDKey(id)] {
            return rowid
        }
        throw .storage("\(schema.database.path): no row for memo \(id.uuidString.lowercased())")
    }

    func close() {
        schema.database.close()
    }
}
