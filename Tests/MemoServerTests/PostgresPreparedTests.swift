import Dispatch
import Foundation
import MemoModel
@testable import MemoPostgres
import MemoProbe
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import Synchronization
import Testing

/// The writer's `memo_write` call and the claimer's statements are prepared once per connection
/// (`PGConnection.execute(…, prepared: true)`): what happens to them when the schema changes under a running
/// server, when the connection is replaced, and when their PREPARE itself fails.
@Suite("PostgreSQL prepared statements: prepared again when stale, per connection, never recorded when refused",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresPreparedTests {
    /// `memo_write`'s argument types, which name it in DROP and ALTER.
    static let writeArguments = "smallint[], uuid[], bytea[], bigint[], bigint[], bigint[], bigint, bigint, text[], "
        + "text[], bigint[], boolean[], integer, boolean"

    /// How many memos in the database have `id`.
    private static func rows(_ servers: SharedDatabaseServers, _ id: UUID) throws -> Int {
        Int(try servers.cluster.sql(
            "SELECT count(*) FROM memos WHERE id = '\(id.uuidString)'", database: servers.database)) ?? -1
    }

    /// A newer memo-server's start drops `memo_write` and creates it with another result type (here one more
    /// column, after those this server reads) while this server holds it prepared: PostgreSQL refuses the
    /// prepared statement ("cached plan must not change result type", 0A000) at every execution. The writer
    /// prepares it again and sends the batch once more, rather than fail every write until it reconnects.
    @Test func aWriteFunctionReplacedWithAnotherResultTypeIsPreparedAgainAndTheBatchWritten() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(createdMemo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
        try servers.cluster.sql("""
            ALTER FUNCTION memo_write(\(Self.writeArguments)) RENAME TO memo_write_before;
            CREATE FUNCTION memo_write(
                kinds smallint[], ids uuid[], contents bytea[], inserts bigint[], updates bigint[], expected bigint[],
                now bigint, after bigint, names text[], serials text[], targets bigint[], merges boolean[],
                keep integer, trash boolean
            ) RETURNS TABLE (
                o_status smallint, o_kind smallint, o_id uuid, o_content bytea, o_insert bigint, o_update bigint,
                o_revision bigint, o_name text, o_serial text, o_restored boolean, o_newer integer
            ) LANGUAGE sql AS $$
                SELECT w.*, 7 FROM memo_write_before(kinds, ids, contents, inserts, updates, expected, now, after,
                    names, serials, targets, merges, keep, trash) w
            $$;
            """, database: servers.database)
        for content in ["after the change", "and the next"] {
            let id = UUID()
            let reply = try client.request(.create(id: id, insertMicros: nil, content: content))
            let made = try #require(createdMemo(reply), "\(reply)")
            #expect(Array(made.content.utf8) == Array(content.utf8))
            #expect(try Self.rows(servers, id) == 1)
        }
        // On the same connection: none was lost or replaced.
        #expect(servers.log(0).isEmpty, "\(servers.log(0))")
    }

    /// The same function dropped and created again with the same result type (a new function, under a new OID):
    /// PostgreSQL plans the prepared statement again by itself, and the writes go on.
    @Test func aWriteFunctionDroppedAndCreatedAgainIsFoundByThePreparedStatement() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(createdMemo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
        try servers.cluster.sql(
            "BEGIN; DROP FUNCTION memo_write(\(Self.writeArguments)); \(PostgresSQL.writeFunction) COMMIT;",
            database: servers.database)
        let id = UUID()
        let reply = try client.request(.create(id: id, insertMicros: nil, content: "after the drop"))
        _ = try #require(createdMemo(reply), "\(reply)")
        #expect(try Self.rows(servers, id) == 1)
        // A newer memo-server's start on the same database (`PostgresSchema.ensure`: CREATE OR REPLACE).
        try PostgresStore(uri: servers.cluster.uri(servers.database)).close()
        let again = UUID()
        _ = try #require(createdMemo(try client.request(.create(id: again, insertMicros: nil, content: "newer start"))))
        #expect(try Self.rows(servers, again) == 1)
    }

    /// The claimer's durability claim (`INSERT … RETURNING revision`, prepared, first of its pipeline) after the
    /// claims' table changed the type of that column: the claim is prepared again and sent once more, rather than
    /// leave every write's outcome unknown (505) until the claimer reconnects.
    @Test func aClaimWhoseResultTypeChangedIsPreparedAgainAndTheWriteAnswered() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(createdMemo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
        try servers.cluster.sql(
            "ALTER TABLE memo_durable ALTER COLUMN revision TYPE numeric", database: servers.database)
        for content in ["claimed after the change", "and the next"] {
            let reply = try client.request(.create(id: nil, insertMicros: nil, content: content))
            let made = try #require(createdMemo(reply), "\(reply)")
            let claimed = UInt64(try servers.cluster.sql(
                "SELECT max(revision)::bigint FROM memo_durable", database: servers.database)) ?? 0
            #expect(claimed >= made.revision)
        }
    }
}

/// The memo a reply carries, or nil.
private func createdMemo(_ reply: Message) -> Memo? {
    if case .memo(let memo) = reply { return memo }
    return nil
}
