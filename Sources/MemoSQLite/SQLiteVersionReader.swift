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
    private let versions: SQLiteStatement
    private let trashed: SQLiteStatement
    private let known: SQLiteStatement
    private let entries: SQLiteStatement

    init(path: String) throws(MemoError) {
        database = try SQLiteDatabase(path: path, readOnly: true)
        versions = try database.prepare(
            "SELECT revision, version, update_us, author, serial, content FROM changes "
                + "WHERE id = ? AND version BETWEEN 1 AND 3 AND revision < ? ORDER BY revision DESC LIMIT ?")
        trashed = try database.prepare("SELECT 1 FROM changes WHERE id = ? AND version = 4 LIMIT 1")
        known = try database.prepare("SELECT 1 FROM changes WHERE id = ? AND current = 1 LIMIT 1")
        entries = try database.prepare(
            "SELECT revision, id, insert_us, update_us, author, serial, content FROM changes "
                + "WHERE version = 4 AND revision < ? ORDER BY revision DESC LIMIT ?")
    }

    func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        queue.async { [self] in
            completion(Result { () throws(MemoError) in try readHistory(id: id, limit: limit, before: before) })
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

    private func readHistory(id: UUID, limit: Int, before: UInt64?) throws(MemoError) -> VersionPage {
        try inTransaction { () throws(MemoError) -> VersionPage in
            versions.bind(1, id.bytes)
            versions.bind(2, Int64(clamping: before ?? UInt64(Int64.max)))
            versions.bind(3, Int64(limit) + 1)
            var found: [MemoVersion] = []
            do throws(MemoError) {
                while try versions.step() {
                    guard let kind = VersionKind(rawValue: UInt8(truncatingIfNeeded: versions.int64(1))) else {
                        continue
                    }
                    found.append(MemoVersion(
                        id: id, revision: UInt64(versions.int64(0)), kind: kind, micros: versions.int64(2),
                        author: Author(name: versions.string(3), serial: versions.string(4)),
                        content: versions.string(5)))
                }
                versions.reset()
            } catch {
                versions.reset()
                throw error
            }
            if found.isEmpty, before == nil, try !exists(id, known), try !exists(id, trashed) {
                throw .notFound(id)
            }
            return VersionPage(versions: Array(found.prefix(limit)), more: found.count > limit)
        }
    }

    private func exists(_ id: UUID, _ statement: SQLiteStatement) throws(MemoError) -> Bool {
        statement.bind(1, id.bytes)
        defer { statement.reset() }
        return try statement.step()
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
