import Foundation
import MemoModel
/// Writes committed batches.
///
/// Each change is one row written with its content and author; an update or a delete also clears the `current`
/// mark of the memo's previous row (found by its revision, which the store's table knows), or deletes that row
/// when it is already older than the history and not a kept version. A create or an update is marked as a version
/// (and the memo's oldest version beyond the policy's count stops being one); a delete is marked as in the trash
/// (or, with no trash days, forgets the memo's versions at once).
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
    private let leaveTrash: SQLiteStatement
    private let dropLeftTrash: SQLiteStatement
    private let nthVersion: SQLiteStatement
    private let dropVersions: SQLiteStatement
    private let unmarkVersions: SQLiteStatement
    private let dropKept: SQLiteStatement
    private let unmarkKept: SQLiteStatement
    private let findVersion: SQLiteStatement
    private let findTrashed: SQLiteStatement
    private let expired: SQLiteStatement
    let policy: VersionPolicy
    private var writesSinceTrim = 0
    /// No row at or below this revision is one that is not current (see `SQLiteSchema.Loaded.trimmed`).
    private var trimmed: UInt64
    /// The revision of each memo as the transaction in progress left it.
    private var pendingRevisions: [UUIDKey: UInt64] = [:]
    /// The revision of a memo as the store's table holds it (before the transaction in progress).
    private let committedRevision: (UUID) -> UInt64?

    /// The revision of a live memo's version just past the newest `policy.keep` (bound: id, keep), read on each
    /// update with versions on. It names only `version > 0`, so that the partial index `changes_versions` answers it
    /// alone: with `version BETWEEN 1 AND 3` as well, SQLite read each of the memo's up to K + 1 rows from the table
    /// to test a column the index lacks (BENCHMARKS.md, "Versions kept against none"). Among a live
    /// memo's rows `version > 0` is a version (1 to 3): its id has no trash row (4), since a create first takes the
    /// id out of the trash (`leaveTrash`) and the upgrade to version 3 trashes only ids with no current row.
    static let nthVersionQuery =
        "SELECT revision FROM changes WHERE id = ? AND version > 0 ORDER BY revision DESC LIMIT 1 OFFSET ?"

    init(
        schema: SQLiteSchema, trimmed: UInt64, policy: VersionPolicy,
        committedRevision: @escaping (UUID) -> UInt64?
    ) throws(MemoError) {
        self.schema = schema
        self.policy = policy
        self.trimmed = trimmed
        self.committedRevision = committedRevision
        let db = schema.database
        begin = try db.prepare("BEGIN IMMEDIATE")
        commit = try db.prepare("COMMIT")
        rollback = try db.prepare("ROLLBACK")
        insertChange = try db.prepare("""
            INSERT INTO changes (revision, current, kind, id, insert_us, update_us, content, author, serial, version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        retire = try db.prepare("UPDATE changes SET current = 0 WHERE revision = ? AND current = 1")
        drop = try db.prepare("DELETE FROM changes WHERE revision = ? AND current = 1 AND version = 0")
        setHead = try db.prepare("UPDATE meta SET value = ? WHERE key = 'head'")
        trim = try db.prepare(
            "DELETE FROM changes WHERE revision > ? AND revision <= ? AND current = 0 AND version = 0")
        // Every statement by id says `version > 0`, the partial index's own term: SQLite uses a partial index only
        // for a query whose WHERE has that term (it does not infer it from `version = 4` or a BETWEEN), and without
        // it each update scanned the whole table (updates at 0.28 of their speed without versions).
        leaveTrash = try db.prepare("UPDATE changes SET version = 0 WHERE id = ? AND version > 0 AND version = 4")
        dropLeftTrash = try db.prepare(
            "DELETE FROM changes WHERE id = ? AND version > 0 AND version = 4 AND revision <= ?")
        nthVersion = try db.prepare(Self.nthVersionQuery)
        dropVersions = try db.prepare(
            "DELETE FROM changes WHERE id = ? AND version > 0 AND version BETWEEN 1 AND 3 AND current = 0 "
                + "AND revision <= ?")
        unmarkVersions = try db.prepare(
            "UPDATE changes SET version = 0 WHERE id = ? AND version > 0 AND version BETWEEN 1 AND 3 "
                + "AND revision <= ?")
        dropKept = try db.prepare("DELETE FROM changes WHERE id = ? AND current = 0 AND version > 0 AND revision <= ?")
        unmarkKept = try db.prepare("UPDATE changes SET version = 0 WHERE id = ? AND current = 0 AND version > 0")
        findVersion = try db.prepare(
            "SELECT version, update_us, author, serial, content FROM changes "
                + "WHERE revision = ? AND id = ? AND version BETWEEN 1 AND 3")
        findTrashed = try db.prepare(
            "SELECT revision, insert_us, update_us, author, serial, content FROM changes "
                + "WHERE id = ? AND version > 0 AND version = 4 ORDER BY revision DESC LIMIT 1")
        expired = try db.prepare("SELECT id FROM changes WHERE version = 4 AND update_us < ?")
    }

    /// The planner's reads of the file: a kept version, a trash entry (on the writer thread, before the batch).
    var lookup: VersionLookup {
        VersionLookup(version: { [self] id, revision in
            findVersion.bind(1, Int64(clamping: revision))
            findVersion.bind(2, id.bytes)
            defer { findVersion.reset() }
            guard (try? findVersion.step()) == true,
                  let kind = VersionKind(rawValue: UInt8(truncatingIfNeeded: findVersion.int64(0))) else { return nil }
            return MemoVersion(
                id: id, revision: revision, kind: kind, micros: findVersion.int64(1),
                author: Author(name: findVersion.string(2), serial: findVersion.string(3)),
                content: findVersion.string(4))
        }, trashed: { [self] id in
            findTrashed.bind(1, id.bytes)
            defer { findTrashed.reset() }
            guard (try? findTrashed.step()) == true else { return nil }
            let revision = UInt64(findTrashed.int64(0))
            let author = Author(name: findTrashed.string(3), serial: findTrashed.string(4))
            let memo = Memo(
                id: id, content: findTrashed.string(5), insertMicros: findTrashed.int64(1),
                updateMicros: findTrashed.int64(2), revision: revision, author: author)
            return TrashEntry(memo: memo, revision: revision, deletedMicros: memo.updateMicros, deletedBy: author)
        })
    }

    /// Purges the trash of the memos deleted before `cutoffMicros`, with their versions, in one transaction.
    /// - Returns: how many memos were purged.
    @discardableResult
    func purgeTrash(deletedBefore cutoffMicros: Int64) throws(MemoError) -> Int {
        expired.bind(1, cutoffMicros)
        var ids: [UUID] = []
        do throws(MemoError) {
            while try expired.step() { if let id = expired.uuid(0) { ids.append(id) } }
            expired.reset()
        } catch {
            expired.reset()
            throw error
        }
        guard !ids.isEmpty else { return 0 }
        try begin.run()
        do throws(MemoError) {
            for id in ids { try forget(id) }
            try commit.run()
        } catch {
            try? rollback.run()
            throw error
        }
        return ids.count
    }

    /// Memo `id` (deleted) keeps no version and leaves the trash: its rows go now when older than the history,
    /// with the history's trim otherwise.
    private func forget(_ id: UUID) throws(MemoError) {
        dropKept.bind(1, id.bytes)
        dropKept.bind(2, Int64(trimmed))
        try dropKept.run()
        unmarkKept.bind(1, id.bytes)
        try unmarkKept.run()
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
        if change.kind == .created {
            // A memo back from the trash (or a new one under a trashed id) leaves the trash.
            dropLeftTrash.bind(1, memo.id.bytes)
            dropLeftTrash.bind(2, Int64(trimmed))
            try dropLeftTrash.run()
            leaveTrash.bind(1, memo.id.bytes)
            try leaveTrash.run()
        } else {
            try retirePrevious(of: memo.id)
        }
        let version: Int64
        if change.kind == .deleted {
            version = policy.trashDays > 0 ? SQLiteSchema.trashVersion : 0
        } else {
            version = policy.keep > 0 ? Int64(change.versionKind?.rawValue ?? 0) : 0
        }
        insertChange.bind(1, Int64(change.revision))
        insertChange.bind(2, change.kind == .deleted ? 0 : 1)
        insertChange.bind(3, Int64(change.kind.rawValue))
        insertChange.bind(4, memo.id.bytes)
        insertChange.bind(5, memo.insertMicros)
        insertChange.bind(6, memo.updateMicros)
        insertChange.bind(7, memo.content)
        insertChange.bind(8, memo.author.name)
        insertChange.bind(9, memo.author.serial)
        insertChange.bind(10, version)
        try insertChange.run()
        pendingRevisions[UUIDKey(memo.id)] = change.revision
        if change.kind == .deleted, version == 0 {
            try forget(memo.id)
        } else if change.kind != .deleted, version != 0, change.kind == .updated || change.restored {
            try capVersions(of: memo.id)
        }
    }

    /// The memo's versions beyond the newest `policy.keep` stop being versions.
    private func capVersions(of id: UUID) throws(MemoError) {
        nthVersion.bind(1, id.bytes)
        nthVersion.bind(2, Int64(policy.keep))
        let cutoff: Int64
        do throws(MemoError) {
            guard try nthVersion.step() else {
                nthVersion.reset()
                return
            }
            cutoff = nthVersion.int64(0)
            nthVersion.reset()
        } catch {
            nthVersion.reset()
            throw error
        }
        dropVersions.bind(1, id.bytes)
        dropVersions.bind(2, min(cutoff, Int64(trimmed)))
        try dropVersions.run()
        unmarkVersions.bind(1, id.bytes)
        unmarkVersions.bind(2, cutoff)
        try unmarkVersions.run()
    }

    /// The memo's row so far stops being its current one: it stays as history, or goes when older than that.
    private func retirePrevious(of id: UUID) throws(MemoError) {
        guard let previous = pendingRevisions[UUIDKey(id)] ?? committedRevision(id) else {
            throw .storage("\(schema.database.path): no row for memo \(id.uuidString.lowercased())")
        }
        var statement = previous <= trimmed ? drop : retire
        statement.bind(1, Int64(previous))
        try statement.run()
        if schema.database.changedRows == 0, statement === drop {
            // A kept version: it stays, no longer current.
            statement = retire
            statement.bind(1, Int64(previous))
            try statement.run()
        }
        guard schema.database.changedRows == 1 else {
            throw .storage("\(schema.database.path): no current row \(previous) for memo \(id.uuidString.lowercased())")
        }
    }

    func close() {
        schema.database.close()
    }
}
