import Foundation
import MemoModel
/// The file's tables, and reading them back into a table and a history.
///
/// - `changes`: one row per change, by revision, with the memo as it was after the change. A memo's content is
///   stored once: the row of the change that made the memo as it is now is marked `current`, and the live memos
///   are those rows (version 1 also kept every memo in a `memos` table, so a create wrote its content twice).
///   Rows that are not current are the history, kept for the last `historyCapacity` revisions at least; a current
///   row stays as long as its memo does, however old. `kind` 0 marks a row that carries a memo but is not a
///   change of the history: a memo carried over from version 1 whose change had already been trimmed.
/// - Version 3 adds to each row its `author` and `serial` (the change's author; empty before version 3) and
///   `version`: 0 for a row that is not a kept version, 1, 2 or 3 (`VersionKind`: create, update, restore) for one
///   of a memo's last `--versions` versions, and 4 (`trashVersion`) for the delete of a memo in the trash. A row
///   that is a version or in the trash stays, whatever the history's bound, until it stops being one (a newer
///   version pushes it out, or the trash is purged); then it goes with the history's next trim, or at once when it
///   is already older than the history.
/// - Version 4 finds a memo's versions from its newest row instead of an index by id (version 3's
///   `changes_versions`, keyed by the memo's random id, made each create or update write one more random page).
///   Each version row links to the memo's version before it (`previous`, a revision, so a rowid lookup) and, once
///   there is one, to the version after it (`following`, set when the row stops being current, in the write that
///   clears its `current` mark anyway); `ordinal` counts the memo's versions (1 for the first of a chain) and
///   `oldest` names, in the memo's newest row, its oldest version still kept. A delete in the trash links to the
///   memo's last version and carries its `ordinal` and `oldest`; the trash is found by id through
///   `changes_trashed_ids`, an index of the trash rows only. The versions that fall past the newest `--versions`
///   stay marked until the writer drops them in bulk (`SQLiteWriter.sweep`, with the history's trim, the trash's
///   purge pass and when the store opens or closes); the readers never go further than the newest K of a chain.
/// - `meta`: `schema` (the format version) and `head`, the revision of the last committed change as of the last
///   trim; `keep`, the `--versions` the versions' marks were last capped for, and `swept`, the revision up to which
///   the memos' versions past it were dropped (both written by the writer; missing after an upgrade). Between trims the head is the newest revision in `changes` (trimming always keeps the newest), so a
///   transaction does not rewrite the meta page; the head is the larger of the two.
final class SQLiteSchema {
    static let version: Int64 = 4
    /// The `kind` of a row that only carries a memo (see the type's comment).
    static let carriedKind: Int64 = 0
    /// The `version` of a delete whose memo is in the trash.
    static let trashVersion: Int64 = 4

    /// Version 2's table, which the upgrade from version 1 makes before it upgrades to version 3.
    static let version2ChangesTable = """
        (revision INTEGER PRIMARY KEY, current INTEGER NOT NULL, kind INTEGER NOT NULL, id BLOB NOT NULL,
         insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, content TEXT NOT NULL)
        """

    static let changesTable = """
        (revision INTEGER PRIMARY KEY, current INTEGER NOT NULL, kind INTEGER NOT NULL, id BLOB NOT NULL,
         insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, content TEXT NOT NULL,
         author TEXT NOT NULL DEFAULT '', serial TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL DEFAULT 0,
         previous INTEGER, following INTEGER, ordinal INTEGER NOT NULL DEFAULT 0, oldest INTEGER)
        """

    /// Version 3's indexes: a memo's versions and trash entry by id, and the trash by revision.
    static let version3Indexes = """
        CREATE INDEX changes_versions ON changes (id, revision) WHERE version > 0;
        CREATE INDEX changes_trash ON changes (revision) WHERE version = 4;
        """

    /// The trash by revision (for `trash`, newest first, and the purge) and by id (a create or a restore of a
    /// deleted memo): both written only by deletes and by memos leaving the trash.
    static let trashIndexes = """
        CREATE INDEX changes_trash ON changes (revision) WHERE version = 4;
        CREATE INDEX changes_trashed_ids ON changes (id) WHERE version = 4;
        """

    let database: SQLiteDatabase
    let historyCapacity: Int

    /// Opens the schema: creates it in a new file, upgrades a version 1, 2 or 3 file in place (in one transaction),
    /// and refuses a version it does not know, naming it.
    init(database: SQLiteDatabase, historyCapacity: Int) throws(MemoError) {
        self.database = database
        self.historyCapacity = historyCapacity
        try database.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        var stored = try value(of: "schema")
        // Version 1 made its tables before its meta rows, outside a transaction: tables without a schema row
        // are version 1's, stopped before its first write.
        if stored == nil, try hasTable("memos") { stored = 1 }
        switch stored {
        case nil:
            try transaction { () throws(MemoError) in
                try database.execute("""
                    CREATE TABLE changes \(Self.changesTable);
                    \(Self.trashIndexes)
                    INSERT INTO meta (key, value) VALUES ('schema', \(Self.version)), ('head', 0);
                    """)
            }
        case 1:
            try transaction { () throws(MemoError) in
                try SQLiteMigration.upgradeFromVersion1(database)
                try SQLiteMigration.upgradeFromVersion2(database)
                try SQLiteMigration.upgradeFromVersion3(database)
            }
        case 2:
            try transaction { () throws(MemoError) in
                try SQLiteMigration.upgradeFromVersion2(database)
                try SQLiteMigration.upgradeFromVersion3(database)
            }
        case 3:
            try transaction { () throws(MemoError) in try SQLiteMigration.upgradeFromVersion3(database) }
        case Self.version:
            break
        case let version?:
            let newer = version > Self.version ? ", made by a newer memo-server" : ""
            throw .storage("""
                \(database.path) has schema version \(version)\(newer); this memo-server reads version \
                \(Self.version) and upgrades versions 1, 2 and 3: use a memo-server that knows version \(version)
                """)
        }
    }

    /// Runs `body` in one transaction: all of it is committed, or (on an error or a crash) none of it.
    private func transaction(_ body: () throws(MemoError) -> Void) throws(MemoError) {
        try database.execute("BEGIN IMMEDIATE")
        do throws(MemoError) {
            try body()
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    private func hasTable(_ name: String) throws(MemoError) -> Bool {
        let statement = try database.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
        statement.bind(1, name)
        defer { statement.reset() }
        return try statement.step()
    }

    func value(of key: String) throws(MemoError) -> Int64? {
        let statement = try database.prepare("SELECT value FROM meta WHERE key = ?")
        statement.bind(1, key)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.int64(0)
    }

    /// What `load` reads: every memo, the history, and how far the history has been trimmed (for the writer).
    struct Loaded {
        var table: MemoTable
        var history: ChangeHistory
        /// No row at or below this revision is a row that is not current.
        var trimmed: UInt64
    }

    /// Reads every memo and the history in one pass over the changes.
    func load() throws(MemoError) -> Loaded {
        guard let recorded = try value(of: "head") else { throw .storage("\(database.path): meta has no head") }
        var head = UInt64(recorded)
        let newest = try database.prepare("SELECT MAX(revision) FROM changes")
        if try newest.step() { head = max(head, UInt64(newest.int64(0))) }
        newest.reset()
        // Sized up front: grown by doubling, the array copied itself about 20 times for a million memos, and the
        // freed copies stayed in the server's memory.
        let counted = try database.prepare("SELECT COUNT(*) FROM changes WHERE current = 1")
        let count = try counted.step() ? Int(counted.int64(0)) : 0
        counted.reset()
        var memos: [Memo] = []
        memos.reserveCapacity(count)
        let oldest = head > UInt64(historyCapacity) ? head - UInt64(historyCapacity) : 0
        var changes: [Change] = []
        changes.reserveCapacity(Int(min(UInt64(historyCapacity), head)))
        var oldestFormer = UInt64.max
        // A million rows by a few certificates share a few authors.
        var authors = AuthorInterner()
        let select = try database.prepare(
            "SELECT revision, current, kind, id, insert_us, update_us, content, author, serial, version FROM changes "
                + "ORDER BY revision")
        while try select.step() {
            let revision = UInt64(select.int64(0))
            let current = select.int64(1) != 0
            let kindValue = select.int64(2)
            let inHistory = revision > oldest && kindValue != Self.carriedKind
            let kept = select.int64(9) != 0
            if !current && !kept { oldestFormer = min(oldestFormer, revision) }
            // Most rows of a large store are older memos' current rows or trimmed-to-be history: only what is kept
            // is decoded.
            guard current || inHistory else { continue }
            guard let id = select.uuid(3), kindValue == Self.carriedKind || ChangeKind(rawValue: UInt8(
                truncatingIfNeeded: kindValue)) != nil, !(current && kindValue == Int64(ChangeKind.deleted.rawValue))
            else { throw .storage("\(database.path): change \(revision) is malformed") }
            let memo = Memo(
                id: id, content: select.string(6), insertMicros: select.int64(4), updateMicros: select.int64(5),
                revision: revision, author: select.author(7, 8, sharing: &authors))
            if current { memos.append(memo) }
            if inHistory, let kind = ChangeKind(rawValue: UInt8(kindValue)) {
                let restored = select.int64(9) == Int64(VersionKind.restore.rawValue)
                changes.append(Change(revision: revision, kind: kind, memo: memo, restored: restored))
            }
        }
        select.reset()
        let table = MemoTable(memos: memos, revision: head)
        memos = []
        // Keep only the contiguous run that ends at head.
        var firstKept = changes.count
        while firstKept > 0, changes[firstKept - 1].revision == head - UInt64(changes.count - firstKept) {
            firstKept -= 1
        }
        let kept = changes[firstKept...]
        var history = ChangeHistory(capacity: historyCapacity, head: head - UInt64(kept.count))
        for change in kept { history.append(change) }
        return Loaded(table: table, history: history, trimmed: min(oldestFormer - 1, oldest))
    }
}
