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

    /// The backend serving the claimer connection of the servers on `servers.database`.
    private static func claimerBackend(_ servers: SharedDatabaseServers) throws -> pid_t? {
        pid_t(try servers.cluster.sql(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'memo-claimer' AND datname = "
                + "'\(servers.database)'", database: "postgres"))
    }

    /// How many memos in the database have `content`.
    private static func stored(_ servers: SharedDatabaseServers, _ content: String) throws -> Int {
        Int(try servers.cluster.sql(
            "SELECT count(*) FROM memos WHERE content = convert_to('\(content)', 'UTF8')",
            database: servers.database)) ?? -1
    }

    @Test func theWriterCommitsTheNextBatchWhileAClaimWaitsForItsFlushAndOneClaimCoversBoth() throws {
        let servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: 30_000)
        defer { servers.stop() }
        let first = UncheckedClient(client: try servers.connect(0, timeout: .seconds(60)))
        let second = UncheckedClient(client: try servers.connect(0, timeout: .seconds(60)))
        #expect(memo(try first.client.request(.create(id: nil, insertMicros: nil, content: "warm"))) != nil)
        // The claim's backend stops: a claim sent now waits as it would for a slow flush.
        let claimer = try #require(try Self.claimerBackend(servers))
        kill(claimer, SIGSTOP)
        var thawed = false
        defer { if !thawed { kill(claimer, SIGCONT) } }
        let answers = Mutex<[String: Message]>([:])
        let group = DispatchGroup()
        for (client, content) in [(first, "batch one"), (second, "batch two")] {
            // The second batch is sent once the first is committed (and its claim waits).
            if content == "batch two" { #expect(try pollUntil { try Self.stored(servers, "batch one") == 1 }) }
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let reply = (try? client.client.request(.create(id: nil, insertMicros: nil, content: content)))
                    ?? .error(code: .internalError, message: "no answer")
                answers.withLock { $0[content] = reply }
            }
        }
        // The writer did not wait for the first batch's claim: the second batch is committed too.
        #expect(try pollUntil { try Self.stored(servers, "batch two") == 1 })
        // Neither is answered before a claim covers it.
        #expect(answers.withLock { $0.isEmpty }, "\(answers.withLock { $0 })")
        kill(claimer, SIGCONT)
        thawed = true
        group.wait()
        let made = answers.withLock { $0 }.values.compactMap(memo)
        #expect(made.count == 2, "\(answers.withLock { $0 })")
        for memo in made { #expect(try Self.claimed(servers) >= memo.revision, "revision \(memo.revision)") }
    }

    @Test func aFrozenClaimerBackendLeavesTheWriteOutcomeUnknownWithinTheStorageTimeoutAndTheServerRecovers() throws {
        let timeoutMillis = 2_000
        let servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: timeoutMillis)
        defer { servers.stop() }
        let client = try servers.connect(0, timeout: .seconds(30))
        #expect(memo(try client.request(.create(id: nil, insertMicros: nil, content: "before"))) != nil)
        let claimer = try #require(try Self.claimerBackend(servers))
        kill(claimer, SIGSTOP)
        var thawed = false
        defer { if !thawed { kill(claimer, SIGCONT) } }
        let started = ContinuousClock.now
        let reply = try client.request(.create(id: nil, insertMicros: nil, content: "unclaimed"))
        let took = ContinuousClock.now - started
        // Committed, but no claim says it is durable: neither success nor a refusal.
        guard case .error(.outcomeUnknown, let text) = reply else {
            Issue.record("a write whose claim got no answer was answered \(reply)")
            return
        }
        #expect(text.contains("did not confirm it durable"), "\(text)")
        #expect(took < .milliseconds(timeoutMillis) + .seconds(3), "took \(took)")
        #expect(try Self.stored(servers, "unclaimed") == 1)
        kill(claimer, SIGCONT)
        thawed = true
        // The claimer makes its connection again: later writes are answered, and the server holds both.
        let after = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "after"))))
        #expect(try Self.claimed(servers) >= after.revision)
        #expect(pollUntil { servers.stores[0].storeState.revision >= after.revision })
    }

    @Test func aClaimerConnectionTerminatedWhileIdleCostsNoWrite() throws {
        let servers = try SharedDatabaseServers(count: 1)
        defer { servers.stop() }
        let client = try servers.connect(0)
        #expect(memo(try client.request(.create(id: nil, insertMicros: nil, content: "first"))) != nil)
        let activity = "FROM pg_stat_activity WHERE application_name = 'memo-claimer' AND datname = "
            + "'\(servers.database)'"
        try servers.cluster.sql("SELECT pg_terminate_backend(pid) \(activity)", database: "postgres")
        #expect(try pollUntil { try servers.cluster.sql("SELECT count(*) \(activity)", database: "postgres") == "0" })
        // The claimer finds its idle connection dead before it sends the claim, and claims on a fresh one.
        let reply = try client.request(.create(id: nil, insertMicros: nil, content: "second"))
        let second = try #require(memo(reply), "\(reply)")
        #expect(try Self.claimed(servers) >= second.revision)
    }
}
