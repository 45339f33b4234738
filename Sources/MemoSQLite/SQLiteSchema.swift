import Foundation
import MemoCore

/// The file's tables, and reading them back into a table and a history.
///
/// - `memos`: one row per live memo, found by its rowid (which the writer keeps in memory for each id): an index
///   on the random UUIDs would make every transaction rewrite a page of the index per write.
/// - `changes`: the last changes (at least `historyCapacity`), each with the memo as it was after the change.
/// - `meta`: `schema` (the format version) and `head`, the revision of the last committed change as of the last
///   trim. Between trims the head is the newest revision in `changes` (trimming always keeps the newest), so a
///   transaction does not rewrite the meta page; the head is the larger of the two.
final class SQLiteSchema {
    static let version: Int64 = 1

    let database: SQLiteDatabase
    let historyCapacity: Int

    init(database: SQLiteDatabase, historyCapacity: Int) throws(MemoError) {
        self.database = database
        self.historyCapacity = historyCapacity
        try database.execute("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS memos (
                id BLOB NOT NULL, content TEXT NOT NULL,
                insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, revision INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS changes (
                revision INTEGER PRIMARY KEY, kind INTEGER NOT NULL, id BLOB NOT NULL, content TEXT NOT NULL,
                insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL);
            INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 1), ('head', 0);
            """)
        let stored = try value(of: "schema")
        guard stored == Self.version else {
            throw .storage("\(database.path) has schema version \(stored); this build reads version \(Self.version)")
        }
    }

    private func value(of key: String) throws(MemoError) -> Int64 {
        let statement = try database.prepare("SELECT value FROM meta WHERE key = ?")
        statement.bind(1, key)
        defer { statement.reset() }
        guard try statement.step() else { throw .storage("\(database.path): meta has no \(key)") }
        return statement.int64(0)
    }

    /// What `load` reads: every memo, the history, and the rowid of every memo's row (for the writer).
    struct Loaded {
        var table: MemoTable
        var history: ChangeHistory
        var rowids: [UUIDKey: Int64]
    }

    /// Reads every memo, its row's rowid and the history, in one pass over the memos.
    func load() throws(MemoError) -> Loaded {
        var head = UInt64(try value(of: "head"))
        let newest = try database.prepare("SELECT MAX(revision) FROM changes")
        if try newest.step() { head = max(head, UInt64(newest.int64(0))) }
        newest.reset()
        // Sized up front: grown by doubling, the array and the dictionary each copied themselves about 20 times
        // for a million memos, and the freed copies stayed in the server's memory.
        let counted = try database.prepare("SELECT COUNT(*) FROM memos")
        let count = try counted.step() ? Int(counted.int64(0)) : 0
        counted.reset()
        var memos: [Memo] = []
        memos.reserveCapacity(count)
        var rowids: [UUIDKey: Int64] = [:]
        rowids.reserveCapacity(count)
        let select = try database.prepare("SELECT id, content, insert_us, update_us, revision, rowid FROM memos")
        while try select.step() {
            guard let id = UUID(bytes: select.bytes(0)) else {
                throw .storage("\(database.path): a memo has a malformed id")
            }
            memos.append(Memo(
                id: id, content: select.string(1), insertMicros: select.int64(2), updateMicros: select.int64(3),
                revision: UInt64(select.int64(4))))
            rowids[UUIDKey(id)] = select.int64(5)
        }
        select.reset()
        let table = MemoTable(memos: memos, revision: head)
        memos = []

        let oldest = head > UInt64(historyCapacity) ? head - UInt64(historyCapacity) : 0
        let changesQuery = try database.prepare("""
            SELECT revision, kind, id, content, insert_us, update_us FROM changes
            WHERE revision > ? ORDER BY revision
            """)
        changesQuery.bind(1, Int64(oldest))
        var changes: [Change] = []
        while try changesQuery.step() {
            let revision = UInt64(changesQuery.int64(0))
            guard let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: changesQuery.int64(1))),
                let id = UUID(bytes: changesQuery.bytes(2))
            else { throw .storage("\(database.path): change \(revision) is malformed") }
            // A change that made the memo as it is now shares the table's copy of its content instead of
            // holding a second one (for a store of 100,000 memos that was a second copy of every content).
            let memo: Memo
            if kind != .deleted, let live = table.memo(id), live.revision == revision {
                memo = live
            } else {
                memo = Memo(
                    id: id, content: changesQuery.string(3), insertMicros: changesQuery.int64(4),
                    updateMicros: changesQuery.int64(5), revision: revision)
            }
            changes.append(Change(revision: revision, kind: kind, memo: memo))
        }
        changesQuery.reset()
        // Keep only the contiguous run that ends at head.
        var firstKept = changes.count
        while firstKept > 0, changes[firstKept - 1].revision == head - UInt64(changes.count - firstKept) {
            firstKept -= 1
        }
        let kept = changes[firstKept...]
        var history = ChangeHistory(capacity: historyCapacity, head: head - UInt64(kept.count))
        for change in kept { history.append(change) }
        return Loaded(table: table, history: history, rowids: rowids)
    }
}
