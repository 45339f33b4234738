import Foundation
import MemoModel
/// Creates the schema on first start, refuses one newer than this binary, and reads the start snapshot.
enum PostgresSchema {
    /// Creates the tables and functions when the database has none; several servers starting at once take turns
    /// on an advisory lock, so only the first creates them.
    /// - Throws: `MemoError.storage` for a database error or a schema newer than this binary knows.
    static func ensure(on connection: PGConnection) throws(MemoError) {
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
                // This binary's functions (an older write function let a client's date move the insert clock),
                // and an insert clock such a date moved into the future set back to the latest insert date up to now.
                try connection.execute(PostgresSQL.writeFunction + PostgresSQL.pruneFunction)
                _ = try connection.execute(
                    "UPDATE memo_head SET last_insert = (SELECT coalesce(max(insert_micros), 0) FROM memos "
                        + "WHERE insert_micros <= $1::bigint) WHERE one AND last_insert > $1::bigint",
                    [.text(String(Date().unixMicros))])
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
    /// read in one repeatable-read transaction so that they describe one instant.
    static func load(
        from connection: PGConnection, historyCapacity: Int
    ) throws(MemoError) -> (table: MemoTable, history: ChangeHistory) {
        do {
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? connection.execute("COMMIT") }
            let heads = try connection.execute(
                "SELECT h.revision, f.revision FROM memo_head h, memo_floor f WHERE h.one AND f.one", [])
            let head = UInt64(heads.integer(0, 0))
            let floor = UInt64(heads.integer(0, 1))
            let memoRows = try connection.execute(
                "SELECT id, content, insert_micros, update_micros, revision, author_name, author_serial FROM memos",
                [])
            var memos: [Memo] = []
            memos.reserveCapacity(memoRows.rowCount)
            for row in 0..<memoRows.rowCount {
                memos.append(
                    Memo(
                        id: memoRows.uuid(row, 0), content: memoRows.text(row, 1),
                        insertMicros: memoRows.integer(row, 2), updateMicros: memoRows.integer(row, 3),
                        revision: UInt64(memoRows.integer(row, 4)),
                        author: Author(name: memoRows.text(row, 5), serial: memoRows.text(row, 6))))
            }
            let start = max(floor, head > UInt64(historyCapacity) ? head - UInt64(historyCapacity) : 0)
            let changeRows = try connection.execute(
                "SELECT revision, kind, id, content, insert_micros, update_micros, author_name, author_serial, vkind "
                    + "FROM memo_changes "
                    + "WHERE revision > $1::bigint ORDER BY revision", [.text(String(start))])
            var history = ChangeHistory(capacity: historyCapacity, head: start)
            for row in 0..<changeRows.rowCount {
                history.append(try change(changeRows, row, from: 0))
            }
            guard history.head == head else {
                throw MemoError.storage("the changes table ends at \(history.head), not at the head \(head)")
            }
            return (MemoTable(memos: memos, revision: head), history)
        } catch let error as MemoError {
            throw error
        } catch {
            throw .storage("cannot read the memos: \(error)")
        }
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
