import Foundation
import MemoModel
@testable import MemoPostgres
import MemoProbe
import MemoStore
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import Synchronization
import Testing

/// The writers commit without waiting for the WAL flush (so that several servers' flushes share `fsync`s instead
/// of taking turns under the head lock), and claim their batches durable before answering; the feeds hand out only
/// what such a claim covers.
@Suite("Several servers over one PostgreSQL: only durable changes are answered or handed out",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresDurableTests {
    /// The claims in the database: the largest revision known flushed.
    private static func claimed(_ servers: SharedDatabaseServers) throws -> UInt64 {
        UInt64(try servers.cluster.sql(
            "SELECT coalesce(max(revision), 0) FROM memo_durable", database: servers.database)) ?? 0
    }

    @Test func aWriteIsAnsweredOnlyOnceADurabilityClaimCoversIt() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        for index in 0..<5 {
            guard case .memo(let memo) = try client.request(.create(id: nil, insertMicros: nil, content: "m \(index)"))
            else {
                Issue.record("the create was refused")
                return
            }
            #expect(try Self.claimed(servers) >= memo.revision, "revision \(memo.revision)")
        }
    }

    @Test func anotherServersChangeNoClaimCoversIsNotAppliedUntilOneDoes() throws {
        // The periodic read is an hour away: the feed reads only on the notifications this test sends.
        let servers = try SharedDatabaseServers(count: 1, recheckMillis: 3_600_000)
        defer { servers.stop() }
        let store = servers.stores[0]
        let id = UUID()
        // Another server's batch as PostgreSQL holds it between its commit and its flush: committed, visible,
        // not yet claimed durable.
        try servers.cluster.sql("""
            BEGIN;
            INSERT INTO memos VALUES ('\(id.uuidString)', 'unflushed'::bytea, 1, 1, 1);
            INSERT INTO memo_changes VALUES (1, 1, '\(id.uuidString)', 'unflushed'::bytea, 1, 1);
            UPDATE memo_head SET revision = 1, last_insert = 1;
            COMMIT;
            """, database: servers.database)
        let before = store.stats.feedProgressNanos.load(ordering: .relaxed)
        try servers.cluster.sql("SELECT pg_notify('\(PostgresSQL.channel)', '1')", database: servers.database)
        // The feed woke and read the table to its (durable) end.
        #expect(pollUntil(seconds: 30) { store.stats.feedProgressNanos.load(ordering: .relaxed) > before })
        #expect(store.storeState.revision == 0, "applied a change no durability claim covers")
        // A claim (what that server's writer sends once its flush is done) lets it through.
        try servers.cluster.sql(PostgresSQL.durable, database: servers.database)
        try servers.cluster.sql("SELECT pg_notify('\(PostgresSQL.channel)', '1')", database: servers.database)
        #expect(pollUntil(seconds: 30) { store.storeState.revision == 1 })
        let client = try servers.connect(0)
        guard case .memo(let memo) = try client.request(.get(id: id)) else {
            Issue.record("the claimed change was not served")
            return
        }
        #expect(Array(memo.content.utf8) == Array("unflushed".utf8))
    }
}
