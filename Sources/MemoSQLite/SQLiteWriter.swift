import Foundation
import MemoModel
/// Writes committed batches.
///
/// Each change is one row written with its content and author, appended at the end of the table; an update or a
/// delete also clears the `current` mark of the memo's previous row (found by its revision, which the store's
/// table knows), or deletes that row when it is already older than the history and not a kept version. A create or
/// an update is marked as a version and linked to the memo's version before it (schema version 4, see
/// `SQLiteSchema`): the link, the version's number and the memo's oldest kept version come from the row whose
/// `current` mark the write clears anyway, so a change writes no page that it would not write without versions.
/// The version that falls past the newest `policy.keep` is not written then: `sweep` drops all of them in bulk
/// (with the history's trim, every 1,024 writes, and the trash's purge pass). A delete is marked as in the trash
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
    private let findTrash: SQLiteStatement
    private let leaveTrash: SQLiteStatement
    private let dropRow: SQLiteStatement
    private let findRow: SQLiteStatement
    private let linkFollowing: SQLiteStatement
    private let collectChain: SQLiteStatement
    private let collectFallen: SQLiteStatement
    private let dropFallen: SQLiteStatement
    private let unmarkFallen: SQLiteStatement
    private let clearFallen: SQLiteStatement
    private let setMeta: SQLiteStatement
    private let newest: SQLiteStatement
    private let expired: SQLiteStatement
    let policy: VersionPolicy
    private var writesSinceTrim = 0
    /// No row at or below this revision is one that is not current (see `SQLiteSchema.Loaded.trimmed`).
    private var trimmed: UInt64
    /// Every memo changed at or below this revision has no version past the newest `policy.keep` still marked.
    private var swept: Int64
    /// The revision of each memo as the transaction in progress left it.
    private var pendingRevisions: [UUIDKey: UInt64] = [:]
    /// The revision of a memo as the store's table holds it (before the transaction in progress).
    private let committedRevision: (UUID) -> UInt64?

    /// A row's `version` that is one of a memo's versions (not 0, not the trash's 4).
    static let versionRow = "version BETWEEN \(VersionKind.create.rawValue) AND \(VersionKind.restore.rawValue)"

    /// The versions past the newest K of every memo whose newest row is newer than ?1: from each such row's oldest
    /// kept version, the chain of versions before it. Each memo costs one lookup of its newest row (a range of the
    /// table's end) and of its oldest version, then one per version that fell: nothing is read by id.
    static let fallenQuery = """
        INSERT OR IGNORE INTO temp.fallen (revision)
        WITH RECURSIVE walk (revision, previous) AS (
            SELECT c.revision, c.previous FROM changes h
                JOIN changes o ON o.revision = h.oldest
                JOIN changes c ON c.revision = o.previous AND c.\(versionRow)
                WHERE h.revision > ?1 AND (h.current = 1 AND h.\(versionRow) OR h.version = \(SQLiteSchema.trashVersion))
            UNION ALL
            SELECT c.revision, c.previous FROM walk JOIN changes c ON c.revision = walk.previous AND c.\(versionRow))
        SELECT revision FROM walk
        """

    init(
        schema: SQLiteSchema, trimmed: UInt64, policy: VersionPolicy,
        committedRevision: @escaping (UUID) -> UInt64?
    ) throws(MemoError) {
        self.schema = schema
        self.policy = policy
        self.trimmed = trimmed
        self.committedRevision = committedRevision
        let db = schema.database
        try db.execute("""
            PRAGMA temp_store = MEMORY;
            CREATE TEMP TABLE IF NOT EXISTS fallen (revision INTEGER PRIMARY KEY);
            CREATE TEMP TABLE IF NOT EXISTS walked (head INTEGER NOT NULL, revision INTEGER NOT NULL,
                depth INTEGER NOT NULL);
            """)
        begin = try db.prepare("BEGIN IMMEDIATE")
        commit = try db.prepare("COMMIT")
        rollback = try db.prepare("ROLLBACK")
        insertChange = try db.prepare("""
            INSERT INTO changes (revision, current, kind, id, insert_us, update_us, content, author, serial, version,
                previous, ordinal, oldest)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        // The row's link to the version after it is written with its `current` mark: the same page.
        retire = try db.prepare(
            "UPDATE changes SET current = 0, following = ?2 WHERE revision = ?1 AND current = 1 "
                + "RETURNING version, ordinal, oldest")
        drop = try db.prepare(
            "DELETE FROM changes WHERE revision = ?1 AND current = 1 AND version = 0 RETURNING version, ordinal, oldest")
        setHead = try db.prepare("UPDATE meta SET value = ? WHERE key = 'head'")
        trim = try db.prepare(
            "DELETE FROM changes WHERE revision > ? AND revision <= ? AND current = 0 AND version = 0")
        // `version = 4`: the partial index's own term, so that SQLite uses `changes_trashed_ids`.
        findTrash = try db.prepare(
            "SELECT revision, insert_us, update_us, author, serial, content, previous, ordinal, oldest FROM changes "
                + "WHERE id = ? AND version = \(SQLiteSchema.trashVersion) ORDER BY revision DESC LIMIT 1")
        leaveTrash = try db.prepare("UPDATE changes SET version = 0 WHERE revision = ?")
        dropRow = try db.prepare("DELETE FROM changes WHERE revision = ?")
        findRow = try db.prepare(
            "SELECT version, update_us, author, serial, content, id, ordinal, following, previous FROM changes "
                + "WHERE revision = ?")
        linkFollowing = try db.prepare("UPDATE changes SET following = ?2 WHERE revision = ?1")
        collectChain = try db.prepare("""
            INSERT OR IGNORE INTO temp.fallen (revision)
            WITH RECURSIVE walk (revision, previous) AS (
                SELECT revision, previous FROM changes WHERE revision = ?1
                UNION ALL
                SELECT c.revision, c.previous FROM walk JOIN changes c ON c.revision = walk.previous AND c.\(Self.versionRow))
            SELECT revision FROM walk
            """)
        collectFallen = try db.prepare(Self.fallenQuery)
        dropFallen = try db.prepare(
            "DELETE FROM changes WHERE revision IN (SELECT revision FROM temp.fallen WHERE revision <= ?) "
                + "AND current = 0")
        unmarkFallen = try db.prepare(
            "UPDATE changes SET version = 0 WHERE revision IN (SELECT revision FROM temp.fallen) AND version <> 0")
        clearFallen = try db.prepare("DELETE FROM temp.fallen")
        setMeta = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
        newest = try db.prepare("SELECT coalesce(MAX(revision), 0) FROM changes")
        expired = try db.prepare(
            "SELECT revision FROM changes WHERE version = \(SQLiteSchema.trashVersion) AND update_us < ?")
        let keptFor = try schema.value(of: "keep")
        swept = try schema.value(of: "swept") ?? 0
        if keptFor != Int64(policy.keep) {
            try inTransaction { () throws(MemoError) in try capEveryMemo() }
        } else {
            do throws(MemoError) {
                try inTransaction { () throws(MemoError) in try sweep(dropBelow: trimmed) }
            } catch .storageFull {
                // Housekeeping waits for room (the purge pass and closing sweep again): a store restarted on a
                // full disk must still open and serve its reads.
            }
        }
    }

    /// Runs `body` in one transaction: all of it is committed, or none of it.
    private func inTransaction(_ body: () throws(MemoError) -> Void) throws(MemoError) {
        let sweptBefore = swept
        try begin.run()
        do throws(MemoError) {
            try body()
            try commit.run()
        } catch {
            swept = sweptBefore
            try? rollback.run()
            throw error
        }
    }

    /// For a file whose versions were capped for another K (or never, after an upgrade): every memo's oldest kept
    /// version found by walking its chain, and the versions past the newest K dropped (all of them with K = 0,
    /// as the memory store keeps none). Reads every memo's chain once: only when the store opens.
    private func capEveryMemo() throws(MemoError) {
        let keep = Int64(policy.keep)
        try schema.database.execute("""
            DELETE FROM temp.walked;
            INSERT INTO temp.walked (head, revision, depth)
            WITH RECURSIVE walk (head, revision, previous, depth) AS (
                SELECT heads.head, v.revision, v.previous, 1 FROM (
                    SELECT revision AS head, revision AS start FROM changes WHERE current = 1 AND \(Self.versionRow)
                    UNION ALL
                    SELECT revision, previous FROM changes WHERE version = \(SQLiteSchema.trashVersion)
                        AND previous IS NOT NULL) AS heads
                JOIN changes v ON v.revision = heads.start AND v.\(Self.versionRow)
                UNION ALL
                SELECT walk.head, c.revision, c.previous, walk.depth + 1 FROM walk
                    JOIN changes c ON c.revision = walk.previous AND c.\(Self.versionRow))
            SELECT head, revision, depth FROM walk;
            UPDATE changes SET oldest = kept.revision FROM (
                SELECT head, revision, ROW_NUMBER() OVER (PARTITION BY head ORDER BY depth DESC) AS rank
                FROM temp.walked WHERE depth <= \(keep)) AS kept
                WHERE kept.rank = 1 AND changes.revision = kept.head;
            INSERT OR IGNORE INTO temp.fallen (revision) SELECT revision FROM temp.walked WHERE depth > \(keep);
            DELETE FROM temp.walked;
            """)
        try dropCollected(below: trimmed)
        try recordSweep()
    }

    /// Drops the versions past the newest `policy.keep` of every memo changed since the last sweep, in bulk: each
    /// goes now when it is older than the history (`dropBelow`), or stops being a version and goes with the
    /// history's trim. The caller holds the transaction.
    /// - Parameter recorded: whether to record the sweep in the meta even when nothing fell (with the trim, which
    ///   writes the meta's head anyway).
    private func sweep(dropBelow bound: UInt64, recorded: Bool = false) throws(MemoError) {
        guard policy.keep > 0 else {
            // With K = 0 no row is a version (the file was capped when it opened), so none can fall.
            swept = try newestRevision()
            return
        }
        collectFallen.bind(1, swept)
        try collectFallen.run()
        if try dropCollected(below: bound) > 0 || recorded {
            try recordSweep()
        } else {
            // Nothing fell: no page written (the meta's `swept` stays behind; the next opening sweeps from there).
            swept = try newestRevision()
        }
    }

    /// Sweeps in a transaction of its own, when a memo changed since the last sweep (the purge pass, closing).
    func sweepNow() throws(MemoError) {
        guard try newestRevision() > swept else { return }
        try inTransaction { () throws(MemoError) in try sweep(dropBelow: trimmed) }
    }

    private func newestRevision() throws(MemoError) -> Int64 {
        defer { newest.reset() }
        return try newest.step() ? newest.int64(0) : 0
    }

    private func recordSweep() throws(MemoError) {
        let head = try newestRevision()
        setMeta.bind(1, "keep")
        setMeta.bind(2, Int64(policy.keep))
        try setMeta.run()
        setMeta.bind(1, "swept")
        setMeta.bind(2, head)
        try setMeta.run()
        swept = head
    }

    /// The rows collected in `temp.fallen` stop being versions or trash: deleted when at or below `bound` (older
    /// than the history) and not current, unmarked otherwise (the history's trim takes them later).
    /// - Returns: how many rows were dropped or unmarked.
    @discardableResult
    private func dropCollected(below bound: UInt64) throws(MemoError) -> Int {
        dropFallen.bind(1, Int64(bound))
        try dropFallen.run()
        var changed = schema.database.changedRows
        try unmarkFallen.run()
        changed += schema.database.changedRows
        try clearFallen.run()
        return changed
    }

    /// The planner's reads of the file: a kept version, a trash entry (on the writer thread, before the batch).
    var lookup: VersionLookup {
        VersionLookup(version: { [self] id, revision in
            try? keptVersion(of: id, made: revision)
        }, trashed: { [self] id in
            guard let row = try? trashRow(of: id) else { return nil }
            return TrashEntry(memo: row.memo, revision: row.memo.revision, deletedMicros: row.memo.updateMicros,
                              deletedBy: row.memo.author)
        })
    }

    /// A memo's row as the chain of its versions sees it (0: no such row).
    private struct Link {
        var revision: Int64
        var version: Int64
        var ordinal: Int64
        var oldest: Int64
        var previous: Int64 = 0
        var isVersion: Bool { (1...3).contains(version) }
    }

    private struct Row {
        var id: UUID?
        var link: Link
        var following: Int64
        var micros: Int64
        var author: Author
        var content: String
    }

    /// Memo `id`'s version made by `revision`, when it is one of the newest `policy.keep`: fewer than K versions
    /// follow it (read by their links, at most K rowid lookups; the planner calls this with the store's table
    /// locked, so it cannot ask the table for the memo's current row).
    private func keptVersion(of id: UUID, made revision: UInt64) throws(MemoError) -> MemoVersion? {
        guard policy.keep > 0, let row = try read(Int64(clamping: revision), content: true),
              row.id == id, row.link.isVersion,
              let kind = VersionKind(rawValue: UInt8(truncatingIfNeeded: row.link.version))
        else { return nil }
        var newer = 0
        var next = row.following
        while next > 0, let later = try read(next, content: false), later.id == id, later.link.isVersion {
            newer += 1
            guard newer < policy.keep else { return nil }
            next = later.following
        }
        return MemoVersion(
            id: id, revision: revision, kind: kind, micros: row.micros, author: row.author, content: row.content)
    }

    /// The row of `revision` (its author and content only when `content`).
    private func read(_ revision: Int64, content: Bool) throws(MemoError) -> Row? {
        findRow.bind(1, revision)
        defer { findRow.reset() }
        guard try findRow.step() else { return nil }
        return Row(
            id: findRow.uuid(5),
            link: Link(revision: revision, version: findRow.int64(0), ordinal: findRow.int64(6), oldest: 0,
                       previous: findRow.int64(8)),
            following: findRow.int64(7), micros: findRow.int64(1),
            author: content ? Author(name: findRow.string(2), serial: findRow.string(3)) : .none,
            content: content ? findRow.string(4) : "")
    }

    /// Memo `id`'s row in the trash, through `changes_trashed_ids`.
    private func trashRow(of id: UUID) throws(MemoError) -> (memo: Memo, link: Link)? {
        findTrash.bind(1, id.bytes)
        defer { findTrash.reset() }
        guard try findTrash.step() else { return nil }
        let revision = findTrash.int64(0)
        let memo = Memo(
            id: id, content: findTrash.string(5), insertMicros: findTrash.int64(1), updateMicros: findTrash.int64(2),
            revision: UInt64(revision), author: Author(name: findTrash.string(3), serial: findTrash.string(4)))
        let link = Link(revision: revision, version: SQLiteSchema.trashVersion, ordinal: findTrash.int64(7),
                        oldest: findTrash.int64(8), previous: findTrash.int64(6))
        return (memo, link)
    }

    /// Purges the trash of the memos deleted before `cutoffMicros`, with their versions, in one transaction.
    /// - Returns: how many memos were purged.
    @discardableResult
    func purgeTrash(deletedBefore cutoffMicros: Int64) throws(MemoError) -> Int {
        expired.bind(1, cutoffMicros)
        var rows: [Int64] = []
        do throws(MemoError) {
            while try expired.step() { rows.append(expired.int64(0)) }
            expired.reset()
        } catch {
            expired.reset()
            throw error
        }
        guard !rows.isEmpty else { return 0 }
        try inTransaction { () throws(MemoError) in
            for row in rows { try collect(chainFrom: row) }
            try dropCollected(below: trimmed)
        }
        return rows.count
    }

    /// The row of `revision` and the versions before it go with the next `dropCollected`.
    private func collect(chainFrom revision: Int64) throws(MemoError) {
        collectChain.bind(1, revision)
        try collectChain.run()
    }

    /// Commits `changes` in one transaction; on any error nothing of them is stored.
    func write(_ changes: [Change], head: UInt64) throws(MemoError) {
        guard !changes.isEmpty else { return }
        try begin.run()
        var trimmedNow = trimmed
        let sweptBefore = swept
        do throws(MemoError) {
            for change in changes { try write(change) }
            writesSinceTrim += changes.count
            if writesSinceTrim >= 1024 {
                writesSinceTrim = 0
                if head > UInt64(schema.historyCapacity) {
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
                try sweep(dropBelow: trimmedNow, recorded: true)
            }
            try commit.run()
            trimmed = trimmedNow
            pendingRevisions.removeAll(keepingCapacity: true)
        } catch {
            pendingRevisions.removeAll(keepingCapacity: true)
            swept = sweptBefore
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
        let revision = Int64(change.revision)
        // The memo's newest version before this change, when its chain goes on.
        var before: Link?
        if change.kind == .created {
            // A memo back from the trash (or a new one under a trashed id) leaves the trash, and its versions go on.
            if let trashed = try trashRow(of: memo.id) {
                try leave(trashed.link)
                if trashed.link.previous > 0, let last = try read(trashed.link.previous, content: false),
                   last.link.isVersion {
                    before = Link(revision: trashed.link.previous, version: last.link.version,
                                  ordinal: trashed.link.ordinal, oldest: trashed.link.oldest)
                    // Its last version's link to the next (the trash row until now): a restore is rare.
                    linkFollowing.bind(1, trashed.link.previous)
                    linkFollowing.bind(2, revision)
                    try linkFollowing.run()
                }
            }
        } else {
            let previous = try retirePrevious(of: memo.id, following: revision)
            if previous.isVersion { before = previous }
        }
        let version: Int64
        if change.kind == .deleted {
            version = policy.trashDays > 0 ? SQLiteSchema.trashVersion : 0
        } else {
            version = policy.keep > 0 ? Int64(change.versionKind?.rawValue ?? 0) : 0
        }
        var link = Link(revision: revision, version: version, ordinal: 0, oldest: 0)
        if link.isVersion {
            link.ordinal = (before?.ordinal ?? 0) + 1
            link.previous = before?.revision ?? 0
            link.oldest = try oldestKept(after: before, newest: link)
        } else if version == SQLiteSchema.trashVersion, let before {
            link.ordinal = before.ordinal
            link.previous = before.revision
            link.oldest = before.oldest
        }
        insertChange.bind(1, revision)
        insertChange.bind(2, change.kind == .deleted ? 0 : 1)
        insertChange.bind(3, Int64(change.kind.rawValue))
        insertChange.bind(4, memo.id.bytes)
        insertChange.bind(5, memo.insertMicros)
        insertChange.bind(6, memo.updateMicros)
        insertChange.bind(7, memo.content)
        insertChange.bind(8, memo.author.name)
        insertChange.bind(9, memo.author.serial)
        insertChange.bind(10, version)
        // 0 stays NULL (unbound): no link.
        if link.previous > 0 { insertChange.bind(11, link.previous) }
        insertChange.bind(12, link.ordinal)
        if link.oldest > 0 { insertChange.bind(13, link.oldest) }
        try insertChange.run()
        pendingRevisions[UUIDKey(memo.id)] = change.revision
        if version == 0, let before {
            // A delete with no trash days, or a memo back from the trash with versions off: no version is kept.
            try collect(chainFrom: before.revision)
            try dropCollected(below: trimmed)
        }
    }

    /// The oldest of the memo's newest `policy.keep` versions once `newest` follows `before`: the one `before`
    /// named, or (when `newest` pushes that one out) the version after it, read by its rowid.
    private func oldestKept(after before: Link?, newest: Link) throws(MemoError) -> Int64 {
        guard let before else { return 0 }
        // A chain's first version (ordinal 1) is its own oldest: it stores none, so that a create's row is no
        // larger than with versions off.
        let beforeOldest = before.ordinal == 1 ? before.revision : before.oldest
        guard beforeOldest > 0 else { return try walkBack(from: newest) }
        guard newest.ordinal > Int64(policy.keep) else { return beforeOldest }
        guard let pushedOut = try read(beforeOldest, content: false), pushedOut.following > 0 else {
            return try walkBack(from: newest)
        }
        return pushedOut.following
    }

    /// The memo's K-th version back from `newest`, following the chain (only when a link is missing).
    private func walkBack(from newest: Link) throws(MemoError) -> Int64 {
        var oldest = newest.revision
        var next = newest.previous
        var depth = 1
        while depth < policy.keep, next > 0, let row = try read(next, content: false), row.link.isVersion {
            oldest = next
            next = row.link.previous
            depth += 1
        }
        return oldest
    }

    /// A trash row whose memo is created again leaves the trash: deleted when older than the history.
    private func leave(_ trashed: Link) throws(MemoError) {
        let statement = trashed.revision <= Int64(trimmed) ? dropRow : leaveTrash
        statement.bind(1, trashed.revision)
        try statement.run()
    }

    /// The memo's row so far stops being its current one: it stays as history, or goes when older than that. Its
    /// link to the version after it is set in the same write.
    /// - Returns: that row's place in the memo's chain of versions.
    private func retirePrevious(of id: UUID, following: Int64) throws(MemoError) -> Link {
        guard let previous = pendingRevisions[UUIDKey(id)] ?? committedRevision(id) else {
            throw .storage("\(schema.database.path): no row for memo \(id.lowercasedString)")
        }
        if previous <= trimmed, let dropped = try returning(drop, Int64(previous), following: nil) {
            return dropped
        }
        // Not dropped: newer than the history, or a kept version (it stays, no longer current).
        guard let retired = try returning(retire, Int64(previous), following: following) else {
            throw .storage("\(schema.database.path): no current row \(previous) for memo \(id.lowercasedString)")
        }
        return retired
    }

    /// Runs `statement` (which returns version, ordinal, oldest) on the row of `revision`.
    private func returning(
        _ statement: SQLiteStatement, _ revision: Int64, following: Int64?
    ) throws(MemoError) -> Link? {
        statement.bind(1, revision)
        if let following { statement.bind(2, following) }
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let link = Link(
            revision: revision, version: statement.int64(0), ordinal: statement.int64(1), oldest: statement.int64(2))
        while try statement.step() {}
        return link
    }

    func close() {
        schema.database.close()
    }
}
