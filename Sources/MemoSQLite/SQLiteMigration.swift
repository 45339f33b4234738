import MemoModel
/// Upgrades older files in place. The caller runs each step inside one transaction, so a crash or an error part
/// way leaves the file as it was, at its old version.
enum SQLiteMigration {
    /// Version 1 kept every memo in `memos` and every change, with its content again, in `changes`. Version 2
    /// keeps the changes only, the memos being the rows marked current: each memo's row of `memos` marks the
    /// change that made it (same revision, same memo), or, when that change was trimmed, becomes a row of its own
    /// that is not part of the history (`SQLiteSchema.carriedKind`).
    static func upgradeFromVersion1(_ database: SQLiteDatabase) throws(MemoError) {
        try database.execute("""
            CREATE TABLE changes_v2 \(SQLiteSchema.version2ChangesTable);
            INSERT INTO changes_v2 (revision, current, kind, id, insert_us, update_us, content)
                SELECT revision, 0, kind, id, insert_us, update_us, content FROM changes;
            INSERT INTO changes_v2 (revision, current, kind, id, insert_us, update_us, content)
                SELECT revision, 1, \(SQLiteSchema.carriedKind), id, insert_us, update_us, content FROM memos WHERE 1
                ON CONFLICT (revision) DO UPDATE SET current = 1
                WHERE changes_v2.id = excluded.id AND changes_v2.content = excluded.content
                    AND changes_v2.insert_us = excluded.insert_us AND changes_v2.update_us = excluded.update_us
                    AND changes_v2.kind <> \(ChangeKind.deleted.rawValue);
            """)
        // A memo whose revision names a different change (a damaged file) was not marked above: the upgrade stops
        // rather than lose it, and the file stays at version 1.
        let memos = try count("SELECT COUNT(*) FROM memos", in: database)
        let marked = try count("SELECT COUNT(*) FROM changes_v2 WHERE current = 1", in: database)
        guard memos == marked else {
            throw .storage("""
                \(database.path): cannot upgrade schema version 1 to \(SQLiteSchema.version): \(memos - marked) \
                memos disagree with the change of their revision; the file is left at version 1
                """)
        }
        try database.execute("""
            DROP TABLE memos;
            DROP TABLE changes;
            ALTER TABLE changes_v2 RENAME TO changes;
            UPDATE meta SET value = 2 WHERE key = 'schema';
            INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 2), ('head', 0);
            """)
    }

    /// Version 3 records each change's author and keeps versions and a trash (see `SQLiteSchema`). Every memo's
    /// versions start with its current row (kind create when that row is its create, update otherwise; author
    /// empty), and each memo whose last delete is still in the history goes to the trash, dated by that delete.
    static func upgradeFromVersion2(_ database: SQLiteDatabase) throws(MemoError) {
        try database.execute("""
            ALTER TABLE changes ADD COLUMN author TEXT NOT NULL DEFAULT '';
            ALTER TABLE changes ADD COLUMN serial TEXT NOT NULL DEFAULT '';
            ALTER TABLE changes ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
            UPDATE changes SET version = CASE kind WHEN \(ChangeKind.created.rawValue) THEN \(VersionKind.create.rawValue)
                ELSE \(VersionKind.update.rawValue) END WHERE current = 1;
            UPDATE changes SET version = \(SQLiteSchema.trashVersion) WHERE kind = \(ChangeKind.deleted.rawValue)
                AND revision IN (SELECT MAX(revision) FROM changes GROUP BY id)
                AND id NOT IN (SELECT id FROM changes WHERE current = 1);
            \(SQLiteSchema.version3Indexes)
            UPDATE meta SET value = 3 WHERE key = 'schema';
            """)
    }

    /// Version 4 finds a memo's versions through links between its rows instead of an index by id (see
    /// `SQLiteSchema`): each version links to the memo's version before and after it, numbered from 1 in revision
    /// order, and each trash row to its memo's last version. The `oldest` marks and the cap to `--versions` are left
    /// to the writer, which sets them for every memo when it opens a file whose `keep` is not its own (as after this
    /// upgrade).
    static func upgradeFromVersion3(_ database: SQLiteDatabase) throws(MemoError) {
        let versionRow = "version BETWEEN \(VersionKind.create.rawValue) AND \(VersionKind.restore.rawValue)"
        try database.execute("""
            ALTER TABLE changes ADD COLUMN previous INTEGER;
            ALTER TABLE changes ADD COLUMN following INTEGER;
            ALTER TABLE changes ADD COLUMN ordinal INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE changes ADD COLUMN oldest INTEGER;
            UPDATE changes SET previous = chain.previous, following = chain.following, ordinal = chain.ordinal
                FROM (SELECT revision, LAG(revision) OVER memo AS previous, LEAD(revision) OVER memo AS following,
                             ROW_NUMBER() OVER memo AS ordinal
                      FROM changes WHERE \(versionRow) WINDOW memo AS (PARTITION BY id ORDER BY revision)) AS chain
                WHERE changes.revision = chain.revision;
            UPDATE changes SET previous = (SELECT MAX(v.revision) FROM changes v WHERE v.id = changes.id
                AND v.version > 0 AND v.\(versionRow) AND v.revision < changes.revision)
                WHERE version = \(SQLiteSchema.trashVersion);
            UPDATE changes SET ordinal = coalesce((SELECT v.ordinal FROM changes v WHERE v.revision = changes.previous), 0)
                WHERE version = \(SQLiteSchema.trashVersion);
            DROP INDEX changes_versions;
            CREATE INDEX changes_trashed_ids ON changes (id) WHERE version = \(SQLiteSchema.trashVersion);
            DELETE FROM meta WHERE key IN ('keep', 'swept');
            UPDATE meta SET value = 4 WHERE key = 'schema';
            """)
    }

    private static func count(_ sql: String, in database: SQLiteDatabase) throws(MemoError) -> Int64 {
        let statement = try database.prepare(sql)
        defer { statement.reset() }
        return try statement.step() ? statement.int64(0) : 0
    }
}
