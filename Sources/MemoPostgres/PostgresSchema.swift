import Foundation
import MemoModel
/// Creates the schema on first start, refuses one newer than this binary, and reads the start snapshot.
enum PostgresSchema {
    /// Creates the tables and functions when the database has none; several servers starting at once take turns
    /// on an advisory lock, so only the first creates them.
    /// - Parameter keepsVersions: false for `--versions 0`: every kept version is then dropped (also the one per
    ///   memo that the upgrade from version 1 starts), as the memory store and SQLite keep none.
    /// - Throws: `MemoError.storage` for a database error or a schema newer than this binary knows.
    static func ensure(on connection: PGConnection, keepsVersions: Bool = true) throws(MemoError) {
        do {
            try connection.execute("BEGIN; SELECT pg_advisory_xact_lock(74201600)")
            let present = try connection.execute("SELECT to_regclass('memo_schema') IS NOT NULL", [])
            if present.bytes(0, 0).first == 0 {
                try connection.execute(PostgresSQL.createSchema)
            } else {
                let found = try connection.execute("SELECT max(version)::bigint FROM memo_schema", [])
                let version = found.isNull(0, 0) ? 0 : found.integer(0, 0)
                if version > PostgresSQL.schemaVersion {
                    _ = try? connection.execute("ROLLBACK")
                    throw MemoError.storage(
                        "the database's memo schema is version \(version), newer than this memo-server knows "
                            + "(\(PostgresSQL.schemaVersion)): upgrade memo-server")
                }
                if version < 2 {
                    // Authors, versions and the trash, in this transaction: all of it or none.
                    try connection.execute(PostgresSQL.upgradeToVersion2)
                }
                // The durable claims' table (for a database made before it), this binary's functions (an older
                // write function let a client's date move the insert clock), and an insert clock such a date moved
                // into the future set back to the latest insert date up to now.
                try connection.execute(PostgresSQL.durableTable + PostgresSQL.writeFunction + PostgresSQL.pruneFunction)
                _ = try connection.execute(
                    "UPDATE memo_head SET last_insert = (SELECT coalesce(max(insert_micros), 0) FROM memos "
                        + "WHERE insert_micros <= $1::bigint) WHERE one AND last_insert > $1::bigint",
                    [.text(String(Date().unixMicros))])
                if !keepsVersions { _ = try connection.execute("SELECT memo_drop_versions()", []) }
            }
            try connection.execute("COMMIT")
        } catch let error as MemoError {
            throw error
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw .storage("cannot prepare the memo schema: \(error)")
        }
    }

    /// The memos, the head and the last changes (at most `historyCapacity`, none at or below the stored floor),
    /// read in one repeatable-read transaction so that they describe one instant, and made durable before they
    /// are served: a writer's commit is visible before its WAL flush (see `PostgresSQL.write`).
    static func load(
        from connection: PGConnection, historyCapacity: Int
    ) throws(MemoError) -> (table: MemoTable, history: ChangeHistory) {
        let loaded = try read(from: connection, historyCapacity: historyCapacity)
        do {
            // After the snapshot's transaction: every commit it saw is then earlier in the WAL than this claim.
            _ = try connection.execute(PostgresSQL.durable, [])
        } catch {
            throw .storage("cannot read the memos: \(error)")
        }
        return loaded
    }

    /// Both tables are streamed (`COPY ... TO STDOUT` in binary) and decoded row by row as they arrive, and the
    /// transaction ends before the table is built: a result of a million rows held whole by libpq cost about 200
    /// bytes a memo more at its peak, and decoding it between the two reads left the transaction idle for longer
    /// than the connection's `idle_in_transaction_session_timeout` (10 s) on a loaded machine, which ended the
    /// start. A change that made its memo as it is shares the table's content instead of holding a second copy.
    private static func read(
        from connection: PGConnection, historyCapacity: Int
    ) throws(MemoError) -> (table: MemoTable, history: ChangeHistory) {
        let head: UInt64
        let start: UInt64
        var memos: [Memo] = []
        var changes: [Change] = []
        // A million rows by a few certificates share a few authors.
        var authors = AuthorInterner()
        do {
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            var open = true
            defer { if open { _ = try? connection.execute("ROLLBACK") } }
            let heads = try connection.execute(
                "SELECT h.revision, f.revision, c.reltuples::bigint FROM memo_head h, memo_floor f, pg_class c "
                    + "WHERE h.one AND f.one AND c.oid = 'memos'::regclass", [])
            head = UInt64(heads.integer(0, 0))
            let floor = UInt64(heads.integer(0, 1))
            // The planner's estimate (-1 before the table was first analysed), to size the list once: grown by
            // doubling, it copied itself about 20 times for a million memos.
            memos.reserveCapacity(Int(min(max(heads.integer(0, 2), 0), 100_000_000)) + 1024)
            try connection.copyOut(
                "COPY memos (id, content, insert_micros, update_micros, revision, author_name, author_serial) "
                    + "TO STDOUT (FORMAT binary)"
            ) { row throws(PGError) in
                memos.append(
                    Memo(
                        id: try row.uuid(), content: try row.text(), insertMicros: try row.integer(),
                        updateMicros: try row.integer(), revision: UInt64(try row.integer()),
                        author: try row.author(sharing: &authors)))
            }
            start = max(floor, head > UInt64(historyCapacity) ? head - UInt64(historyCapacity) : 0)
            changes.reserveCapacity(Int(min(head - min(start, head), UInt64(historyCapacity))))
            var problem: String?
            try connection.copyOut(
                "COPY (SELECT revision, kind, id, content, insert_micros, update_micros, author_name, author_serial, "
                    + "vkind FROM memo_changes WHERE revision > \(start) ORDER BY revision) TO STDOUT (FORMAT binary)"
            ) { row throws(PGError) in
                guard problem == nil else { return }
                let revision = UInt64(try row.integer())
                guard revision == start + UInt64(changes.count) + 1 else {
                    problem = "the changes table has no change \(start + UInt64(changes.count) + 1)"
                    return
                }
                guard let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: try row.integer())) else {
                    problem = "change \(revision) has an unknown kind"
                    return
                }
                let memo = Memo(
                    id: try row.uuid(), content: try row.text(), insertMicros: try row.integer(),
                    updateMicros: try row.integer(), revision: revision, author: try row.author(sharing: &authors))
                changes.append(Change(revision: revision, kind: kind, memo: memo, restored: try row.integer() == 3))
            }
            try connection.execute("COMMIT")
            open = false
            if let problem { throw MemoError.storage(problem) }
        } catch let error as MemoError {
            throw error
        } catch {
            throw .storage("cannot read the memos: \(error)")
        }
        let table = MemoTable(memos: memos, revision: head)
        memos = []
        var history = ChangeHistory(capacity: historyCapacity, head: start)
        for var change in changes {
            if let current = table.memo(change.memo.id), current.revision == change.revision,
                current.content.hasSameBytes(as: change.memo.content)
            {
                change.memo.content = current.content
            }
            history.append(change)
        }
        changes = []
        guard history.head == head else {
            throw .storage("the changes table ends at \(history.head), not at the head \(head)")
        }
        return (table, history)
    }

    /// Decodes a `memo_changes` row whose columns start at `first`: revision, kind, id, content, insert, update,
    /// author name, author serial, vkind.
    static func change(_ rows: PGResult, _ row: Int, from first: Int) throws(MemoError) -> Change {
        let revision = UInt64(rows.integer(row, first))
        guard let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: rows.integer(row, first + 1))) else {
            throw .storage("change \(revision) has an unknown kind")
        }
        let memo = Memo(
            id: rows.uuid(row, first + 2), content: rows.text(row, first + 3),
            insertMicros: rows.integer(row, first + 4), updateMicros: rows.integer(row, first + 5),
            revision: revision, author: Author(name: rows.text(row, first + 6), serial: rows.text(row, first + 7)))
        return Change(revision: revision, kind: kind, memo: memo, restored: rows.integer(row, first + 8) == 3)
    }
}
