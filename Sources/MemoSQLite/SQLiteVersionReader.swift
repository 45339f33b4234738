import Dispatch
import Foundation
import MemoModel

/// Reads a store file's kept versions and trash on a connection and a thread of its own, so that a `history` or
/// `trash` request never waits for the writer (SQLite's WAL lets it read what was committed while the writer
/// writes) and never blocks the caller's thread.
// @unchecked Sendable: its connection and statements are used only on `queue`, one call at a time.
final class SQLiteVersionReader: @unchecked Sendable {
    private let queue = DispatchQueue(label: "memo-sqlite-versions")
    private let database: SQLiteDatabase
    private let row: SQLiteStatement
    private let trashed: SQLiteStatement
    private let entries: SQLiteStatement
    /// The versions kept per memo: a chain is read no further than its newest `keep` (older ones that have not
    /// been swept yet are no longer versions).
    private let keep: Int

    init(path: String, keep: Int) throws(MemoError) {
        self.keep = keep
        database = try SQLiteDatabase(path: path, readOnly: true)
        row = try database.prepare(
            "SELECT version, update_us, author, serial, content, previous, id FROM changes WHERE revision = ?")
        trashed = try database.prepare(
            "SELECT previous FROM changes WHERE id = ? AND version = \(SQLiteSchema.trashVersion) "
                + "ORDER BY revision DESC LIMIT 1")
        entries = try database.prepare(
            "SELECT revision, id, insert_us, update_us, author, serial, content FROM changes "
                + "WHERE version = 4 AND revision < ? ORDER BY revision DESC LIMIT ?")
    }

    /// - Parameter live: the memo's revision in the store's table, when it holds the memo (its newest row, where
    ///   its chain of versions starts).
    func history(
        id: UUID, limit: Int, before: UInt64?, live: UInt64?,
        completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        queue.async { [self] in
            completion(Result { () throws(MemoError) in
                try readHistory(id: id, limit: limit, before: before, live: live)
            })
        }
    }

    func trash(limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void) {
        queue.async { [self] in
            completion(Result { () throws(MemoError) in try readTrash(limit: limit, before: before) })
        }
    }

    /// One read transaction, so that the page and the existence checks describe one instant.
    private func inTransaction<T>(_ body: () throws(MemoError) -> T) throws(MemoError) -> T {
        try database.execute("BEGIN")
        defer { try? database.execute("COMMIT") }
        return try body()
    }

    /// Follows the memo's chain of versions from its newest row (the live memo's current row, or the row before
    /// its trash row): one rowid lookup per version, at most `keep`.
    private func readHistory(id: UUID, limit: Int, before: UInt64?, live: UInt64?) throws(MemoError) -> VersionPage {
        try inTransaction { () throws(MemoError) -> VersionPage in
            var next: Int64
            if let live {
                next = Int64(clamping: live)
            } else {
                trashed.bind(1, id.bytes)
                defer { trashed.reset() }
                guard try trashed.step() else { throw .notFound(id) }
                next = trashed.int64(0)
            }
            let bound = before ?? UInt64.max
            var found: [MemoVersion] = []
            var depth = 0
            while next > 0, depth < keep, found.count <= limit {
                row.bind(1, next)
                defer { row.reset() }
                guard try row.step(), row.uuid(6) == id,
                      let kind = VersionKind(rawValue: UInt8(truncatingIfNeeded: row.int64(0)))
                else { break }
                depth += 1
                if UInt64(next) < bound {
                    found.append(MemoVersion(
                        id: id, revision: UInt64(next), kind: kind, micros: row.int64(1),
                        author: Author(name: row.string(2), serial: row.string(3)), content: row.string(4)))
                }
                next = row.int64(5)
            }
            return VersionPage(versions: Array(found.prefix(limit)), more: found.count > limit)
        }
    }

    private func readTrash(limit: Int, before: UInt64?) throws(MemoError) -> TrashPage {
        try inTransaction { () throws(MemoError) -> TrashPage in
            entries.bind(1, Int64(clamping: before ?? UInt64(Int64.max)))
            entries.bind(2, Int64(limit) + 1)
            var found: [TrashEntry] = []
            do throws(MemoError) {
                while try entries.step() {
                    guard let id = entries.uuid(1) else { continue }
                    let revision = UInt64(entries.int64(0))
                    let author = Author(name: entries.string(4), serial: entries.string(5))
                    let memo = Memo(
                        id: id, content: entries.string(6), insertMicros: entries.int64(2),
                        updateMicros: entries.int64(3), revision: revision, author: author)
                    found.append(TrashEntry(
                        memo: memo, revision: revision, deletedMicros: memo.updateMicros, deletedBy: author))
                }
                entries.reset()
            } catch {
                entries.reset()
                throw error
            }
            return TrashPage(entries: Array(found.prefix(limit)), more: found.count > limit)
        }
    }

    func close() {
        queue.sync { database.close() }
    }
}
