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

    /// A fresh database with a table `held` of `rows` rows, locked by another session (`holder`, in its
    /// transaction until its ROLLBACK), and a connection whose PREPARE of a query on it waits for that lock.
    private static func lockedTable(
        rows: Int
    ) throws -> (uri: String, connection: PGConnection, holder: PGConnection) {
        let postgres = try TestPostgres.shared()
        let uri = postgres.uri(try postgres.makeDatabaseName())
        let connection = try PGConnection(uri: uri, defaults: [], timeoutMillis: 30_000)
        let holder = try PGConnection(uri: uri, defaults: [], timeoutMillis: 30_000)
        try connection.execute(
            "CREATE TABLE held (n integer); INSERT INTO held SELECT generate_series(1, \(rows))")
        try holder.execute("BEGIN; LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
        return (uri, connection, holder)
    }

    /// The rows of `pg_stat_activity` of `database`'s writer while it waits for a lock.
    private static func writerWaitingForALock(_ database: String) -> String {
        "FROM pg_stat_activity WHERE application_name = 'memo-writer' AND datname = '\(database)' "
            + "AND wait_event_type = 'Lock'"
    }

    /// Another session takes the head lock (`holder`, in its transaction), a create of `id` is sent from a thread
    /// of its own, and this returns once the writer's `memo_write` waits for that lock; the create's answer comes
    /// to `answer`.
    private static func createWaitingForTheHeadLock(
        _ client: UncheckedClient, id: UUID, cluster: TestPostgres, database: String
    ) throws -> (holder: PGConnection, answer: Recorder<Message>) {
        let holder = try PGConnection(uri: cluster.uri(database), defaults: [], timeoutMillis: 30_000)
        try holder.execute("BEGIN; SELECT revision FROM memo_head FOR UPDATE")
        let answer = Recorder<Message>()
        Thread.detachNewThread {
            let reply = (try? client.client.request(.create(id: id, insertMicros: nil, content: "in flight")))
                ?? .error(code: .internalError, message: "no answer")
            answer.record(reply)
        }
        #expect(try pollUntil {
            try cluster.sql("SELECT count(*) \(writerWaitingForALock(database))", database: "postgres") == "1"
        })
        return (holder, answer)
    }

    /// A newer memo-server's start drops `memo_write` and creates it with another result type (here one more
    /// column, after those this server reads) while this server holds it prepared: PostgreSQL refuses the
    /// prepared statement ("cached plan must not change result type", 0A000) at every execution. The writer
    /// prepares it again and sends the batch once more, rather than fail every write until it reconnects.
    @Test func aWriteFunctionReplacedWithAnotherResultTypeIsPreparedAgainAndTheBatchWritten() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
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
            let made = try #require(memo(reply), "\(reply)")
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
        _ = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
        try servers.cluster.sql(
            "BEGIN; DROP FUNCTION memo_write(\(Self.writeArguments)); \(PostgresSQL.writeFunction) COMMIT;",
            database: servers.database)
        let id = UUID()
        let reply = try client.request(.create(id: id, insertMicros: nil, content: "after the drop"))
        _ = try #require(memo(reply), "\(reply)")
        #expect(try Self.rows(servers, id) == 1)
        // A newer memo-server's start on the same database (`PostgresSchema.ensure`: CREATE OR REPLACE).
        try PostgresStore(uri: servers.cluster.uri(servers.database)).close()
        let again = UUID()
        _ = try #require(memo(try client.request(.create(id: again, insertMicros: nil, content: "newer start"))))
        #expect(try Self.rows(servers, again) == 1)
    }

    /// The claimer's durability claim (`INSERT … RETURNING revision`, prepared, first of its pipeline) after the
    /// claims' table changed the type of that column: the claim is prepared again and sent once more, rather than
    /// leave every write's outcome unknown (505) until the claimer reconnects.
    @Test func aClaimWhoseResultTypeChangedIsPreparedAgainAndTheWriteAnswered() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "prepared"))))
        try servers.cluster.sql(
            "ALTER TABLE memo_durable ALTER COLUMN revision TYPE numeric", database: servers.database)
        for content in ["claimed after the change", "and the next"] {
            let reply = try client.request(.create(id: nil, insertMicros: nil, content: content))
            let made = try #require(memo(reply), "\(reply)")
            let claimed = UInt64(try servers.cluster.sql(
                "SELECT max(revision)::bigint FROM memo_durable", database: servers.database)) ?? 0
            #expect(claimed >= made.revision)
        }
    }

    /// A PREPARE that PostgreSQL refuses, here cancelled by `statement_timeout` while it waits for a lock (its
    /// parse opens the table), records no name: the next call prepares the statement afresh rather than execute
    /// a name the server never made ("prepared statement does not exist").
    @Test func aPrepareCancelledByTheStatementTimeoutIsNotRecordedAsPrepared() throws {
        let (_, connection, holder) = try Self.lockedTable(rows: 2)
        try connection.execute("SET statement_timeout = '300ms'")
        let statement = "SELECT count(*)::bigint FROM held"
        do throws(PGError) {
            _ = try connection.execute(statement, [], prepared: true)
            Issue.record("the PREPARE was not held by the lock")
        } catch {
            #expect(error.sqlState == "57014", "\(error)")
            #expect(!error.connectionLost && !error.sent, "\(error)")
        }
        try holder.execute("ROLLBACK")
        let counted = try connection.execute(statement, [], prepared: true)
        #expect(counted.integer(0, 0) == 2)
        // Prepared now: the second run executes the name (nothing is parsed again) and finds the same.
        #expect(try connection.execute(statement, [], prepared: true).integer(0, 0) == 2)
        #expect(try connection.execute(
            "SELECT count(*)::bigint FROM pg_prepared_statements WHERE statement = $1", [.text(statement)]
        ).integer(0, 0) == 1)
    }

    /// Our own deadline passing during a PREPARE gives the connection up: it is never used again, so that a name
    /// whose fate is unknown cannot be executed, and a fresh connection prepares its own.
    @Test func aPrepareCutOffByTheDeadlineGivesTheConnectionUp() throws {
        let (uri, connection, holder) = try Self.lockedTable(rows: 0)
        let statement = "SELECT count(*)::bigint FROM held"
        do throws(PGError) {
            _ = try connection.execute(statement, [], prepared: true, deadline: .now() + .milliseconds(300))
            Issue.record("the PREPARE was not held by the lock")
        } catch {
            #expect(error.timedOut && error.connectionLost && !error.sent, "\(error)")
        }
        #expect(!connection.isHealthy)
        try holder.execute("ROLLBACK")
        let fresh = try PGConnection(uri: uri, defaults: [], timeoutMillis: 30_000)
        #expect(try fresh.execute(statement, [], prepared: true).integer(0, 0) == 0)
    }

    /// The writer's backend terminated while a create waits in `memo_write` (queued behind another session's head
    /// lock): the client is told the outcome is unknown (505), its retry with the same id makes exactly one memo,
    /// and the writer's new connection prepares `memo_write` again (the names live with the connection).
    @Test func aWriterTerminatedWithACreateInFlightAnswersTruthfullyAndTheRetryMakesOneMemo() throws {
        let servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: 20_000)
        defer { servers.stop() }
        let client = UncheckedClient(client: try servers.connect(0, timeout: .seconds(60)))
        _ = try #require(memo(try client.client.request(
            .create(id: nil, insertMicros: nil, content: "prepared"))))
        let id = UUID()
        let (holder, answer) = try Self.createWaitingForTheHeadLock(
            client, id: id, cluster: servers.cluster, database: servers.database)
        var held = true
        defer { if held { _ = try? holder.execute("ROLLBACK") } }
        try servers.cluster.sql(
            "SELECT pg_terminate_backend(pid) \(Self.writerWaitingForALock(servers.database))", database: "postgres")
        #expect(pollUntil { !answer.values.isEmpty })
        let reply = try #require(answer.values.first)
        guard case .error(.outcomeUnknown, _) = reply else {
            Issue.record("a create whose connection was cut after it was sent was answered \(reply)")
            return
        }
        _ = try holder.execute("ROLLBACK")
        held = false
        let retried = try client.client.request(.create(id: id, insertMicros: nil, content: "in flight"))
        let made = try #require(memo(retried), "\(retried)")
        #expect(made.id == id && Array(made.content.utf8) == Array("in flight".utf8))
        #expect(try Self.rows(servers, id) == 1)
        let again = try client.client.request(.create(id: id, insertMicros: nil, content: "in flight"))
        #expect(memo(again)?.revision == made.revision, "\(again)")
        #expect(try Self.rows(servers, id) == 1)
    }

    /// PostgreSQL restarted (`pg_ctl restart -m fast`) under a running server while a create waits in `memo_write`
    /// (queued behind another session's head lock): the create is answered 505 (sent, then cut), its retry with
    /// the same id after the restart makes exactly one memo, and the writer and the claimer, on new connections,
    /// prepare their statements again.
    @Test func aFastRestartWithACreateInFlightAnswersTruthfullyAndWritesResume() throws {
        // A cluster of its own: restarting the shared one would cut the tests running beside this one.
        let cluster = try TestPostgres.dedicated()
        defer { cluster.stop() }
        let servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: 20_000, cluster: cluster)
        defer { servers.stop() }
        let client = UncheckedClient(client: try servers.connect(0, timeout: .seconds(60)))
        _ = try #require(memo(try client.client.request(
            .create(id: nil, insertMicros: nil, content: "before"))))
        let id = UUID()
        let (holder, answer) = try Self.createWaitingForTheHeadLock(
            client, id: id, cluster: cluster, database: servers.database)
        // The lock is held until the restart ends its session.
        try withExtendedLifetime(holder) { try cluster.restartFast() }
        #expect(pollUntil { !answer.values.isEmpty })
        let reply = try #require(answer.values.first)
        switch reply {
        case .error(.outcomeUnknown, _): break
        case .memo(let memo) where memo.id == id:
            // Also truthful: the fast shutdown ended the holder's session first, and the waiting write took the
            // lock and committed before its own session was ended (a race inside PostgreSQL's shutdown).
            #expect(try Self.rows(servers, id) == 1)
        default:
            Issue.record("a create whose connection was cut after it was sent was answered \(reply)")
            return
        }
        // Refused (501, nothing changed) while the writer's reconnection waits out its backoff (at most 2 s), then
        // made.
        let deadline = ContinuousClock.now + .seconds(15)
        var retried = try client.client.request(.create(id: id, insertMicros: nil, content: "in flight"))
        while memo(retried) == nil, ContinuousClock.now < deadline {
            guard case .error(.storageUnavailable, _) = retried else { break }
            retried = try client.client.request(.create(id: id, insertMicros: nil, content: "in flight"))
        }
        let made = try #require(memo(retried), "\(retried)")
        #expect(made.id == id && Array(made.content.utf8) == Array("in flight".utf8))
        #expect(try Self.rows(servers, id) == 1)
        let next = UUID()
        _ = try #require(memo(try client.client.request(.create(id: next, insertMicros: nil, content: "next"))))
        #expect(try Self.rows(servers, next) == 1)
    }
}
