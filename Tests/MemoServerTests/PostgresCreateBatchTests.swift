import Foundation
import MemoModel
@testable import MemoPostgres
import MemoTestSupport
import PostgresTestSupport
import Testing

/// `memo_write`'s one pass for a batch of creates of fresh ids (`PostgresSQL.createBatch`) against its loop: each
/// test writes the same batches, with the same time, into two databases, one with the function as made, one with
/// the function without that pass (the loop alone, as before it), and compares what the calls answered and every
/// row of the tables.
@Suite("PostgreSQL: a batch of fresh creates in one pass, as the loop writes it", .enabled(if: postgresTestsEnabled))
struct PostgresCreateBatchTests {
    /// One write of a call: its kind (1 create, 2 update, 3 delete), id, content and a client's dates.
    struct Write: Sendable, CustomStringConvertible {
        var kind = 1
        var id: UUID
        var content: String
        var insert: Int64?
        var update: Int64?
        var name = "alice"
        var serial = "0A1B"
        var description: String { "\(kind) \(id.uuidString.prefix(8))" }
    }

    /// The fast database and the loop's: each opened by a store (the schema and the function as made), the loop's
    /// then given the function without the batch's pass.
    private func databases(_ postgres: TestPostgres) throws -> (fast: String, loop: String) {
        let fast = try postgres.makeDatabaseName()
        let loop = try postgres.makeDatabaseName()
        try PostgresStore(uri: postgres.uri(fast)).close()
        try PostgresStore(uri: postgres.uri(loop)).close()
        let loopOnly = PostgresSQL.writeFunction.replacingOccurrences(of: PostgresSQL.createBatch, with: "")
        #expect(loopOnly != PostgresSQL.writeFunction)
        try postgres.sql(loopOnly, database: loop)
        return (fast, loop)
    }

    /// The `memo_write` call for `writes` at time `now`, each result row one line starting with `R|`.
    private func call(_ writes: [Write], now: Int64, after: String = "9223372036854775807", keep: Int = 20) -> String {
        func array(_ items: [String], _ type: String) -> String { "ARRAY[\(items.joined(separator: ","))]::\(type)[]" }
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        let hex = writes.map { "decode('\($0.content.utf8.map { String(format: "%02x", $0) }.joined())', 'hex')" }
        return """
            SELECT 'R|' || w::text FROM memo_write(\(array(writes.map { String($0.kind) }, "smallint")),
                \(array(writes.map { literal($0.id.uuidString) }, "uuid")), \(array(hex, "bytea")),
                \(array(writes.map { $0.insert.map(String.init) ?? "NULL" }, "bigint")),
                \(array(writes.map { $0.update.map(String.init) ?? "NULL" }, "bigint")),
                \(array(writes.map { _ in "NULL" }, "bigint")), \(now), \(after),
                \(array(writes.map { literal($0.name) }, "text")), \(array(writes.map { literal($0.serial) }, "text")),
                \(array(writes.map { _ in "NULL" }, "bigint")), \(array(writes.map { _ in "false" }, "boolean")),
                \(keep), true) w
            """
    }

    /// Runs `writes` in `database`: the rows the call answered, and the plans of the inserts into `memos` its
    /// statements ran (auto_explain, nested statements included), one per statement.
    private func run(
        _ postgres: TestPostgres, _ database: String, _ writes: [Write], now: Int64,
        after: String = "9223372036854775807", keep: Int = 20
    ) throws -> (rows: [Substring], memoInserts: Int) {
        let output = try postgres.sql("""
            LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;
            SET auto_explain.log_nested_statements = on; SET client_min_messages = log;
            \(call(writes, now: now, after: after, keep: keep))
            """, database: database).split(separator: "\n")
        return (output.filter { $0.hasPrefix("R|") },
                output.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("Insert on memos ") }.count)
    }

    /// Every row of the head, the memos and the changes.
    private func tables(_ postgres: TestPostgres, _ database: String) throws -> String {
        try postgres.sql("""
            SELECT 'head', * FROM memo_head; SELECT 'memo', * FROM memos ORDER BY id;
            SELECT 'change', * FROM memo_changes ORDER BY revision;
            """, database: database)
    }

    private func fresh(_ count: Int, _ prefix: String = "memo") -> [Write] {
        (0..<count).map { Write(id: UUID(), content: "\(prefix) \($0): 한글 ✓", name: "name \($0)", serial: "S\($0)") }
    }

    @Test func aBatchOfFreshCreatesIsOneInsertPerTableAndGivesWhatTheLoopGives() async throws {
        let postgres = try TestPostgres.shared()
        let (fast, loop) = try databases(postgres)
        let now: Int64 = 1_700_000_000_000_000
        // Versions kept, then none kept (vkind 0) after another server's changes (status 5 rows first), then a
        // batch at a time before the clock's last date (the dates go on from it, one apart).
        let batches: [(writes: [Write], now: Int64, after: String, keep: Int)] = [
            (fresh(7, "first"), now, "9223372036854775807", 20),
            (fresh(5, "second"), now + 1_000, "3", 0),
            (fresh(4, "third"), now - 5_000_000, "9223372036854775807", 20),
        ]
        for batch in batches {
            let byPass = try run(postgres, fast, batch.writes, now: batch.now, after: batch.after, keep: batch.keep)
            let byLoop = try run(postgres, loop, batch.writes, now: batch.now, after: batch.after, keep: batch.keep)
            #expect(byPass.rows == byLoop.rows)
            #expect(byPass.rows.filter { $0.hasPrefix("R|(0,1,") }.count == batch.writes.count)
            // One insert for the batch, where the loop makes one per create.
            #expect(byPass.memoInserts == 1)
            #expect(byLoop.memoInserts == batch.writes.count)
        }
        #expect(try tables(postgres, fast) == tables(postgres, loop))
        #expect(try postgres.sql("SELECT string_agg(vkind::text, '' ORDER BY revision) FROM memo_changes",
                                 database: fast) == "1111111" + "00000" + "1111")

        // The versions a server's `log` shows, once claimed durable: the same in both, one for each memo of the
        // first batch.
        let ids = batches.flatMap { $0.writes.map(\.id) }
        var histories: [[[MemoVersion]]] = []
        for database in [fast, loop] {
            try postgres.sql(PostgresSQL.durable, database: database)
            let store = try PostgresStore(uri: postgres.uri(database))
            defer { store.close() }
            var versions: [[MemoVersion]] = []
            for id in ids { versions.append(try await store.history(id: id, limit: 10).versions) }
            histories.append(versions)
        }
        #expect(histories[0] == histories[1])
        #expect(histories[0].prefix(7).map(\.count) == Array(repeating: 1, count: 7))
        #expect(histories[0].first?.first?.content == batches[0].writes[0].content)
        #expect(histories[0].first?.first?.author == Author(name: "name 0", serial: "S0"))
    }

    /// The batches the pass must leave to the loop, each after the same earlier writes in both databases.
    enum Fallback: String, CaseIterable, Sendable {
        case duplicateID, presentID, trashedID, clientInsertDate, clientUpdateDate, clockNearItsCap, withAnUpdate
    }

    @Test(arguments: Fallback.allCases)
    func aBatchThePassDoesNotTakeGoesThroughTheLoopAsBefore(_ fallback: Fallback) throws {
        let postgres = try TestPostgres.shared()
        let (fast, loop) = try databases(postgres)
        let now: Int64 = 1_700_000_000_000_000
        let earlier = fresh(3, "earlier")
        var deleted = earlier[1]
        deleted.kind = 3
        var batch = fresh(4, "batch")
        var setup: [[Write]] = [earlier]
        var clock: Int64?
        switch fallback {
        case .duplicateID: batch[2].id = batch[0].id
        case .presentID: batch[1] = Write(id: earlier[0].id, content: "another content")
        case .trashedID:
            setup.append([deleted])
            batch[2] = Write(id: deleted.id, content: "back under a trashed id")
        case .clientInsertDate: batch[3].insert = now - 10
        case .clientUpdateDate: batch[0].update = now + 10
        case .clockNearItsCap: clock = MemoDates.latestMicros - 3
        case .withAnUpdate: batch[1] = Write(kind: 2, id: earlier[2].id, content: "updated")
        }
        for database in [fast, loop] {
            for writes in setup { _ = try run(postgres, database, writes, now: now) }
            if let clock { try postgres.sql("UPDATE memo_head SET last_insert = \(clock)", database: database) }
        }
        let byPass = try run(postgres, fast, batch, now: now)
        let byLoop = try run(postgres, loop, batch, now: now)
        #expect(byPass.rows == byLoop.rows)
        #expect(byPass.rows.count == batch.count)
        // The loop ran: one insert per memo it created, as in the loop's database.
        #expect(byPass.memoInserts == byLoop.memoInserts)
        #expect(byPass.memoInserts > 1)
        #expect(try tables(postgres, fast) == tables(postgres, loop))
        if fallback == .trashedID {
            // The create under the trashed id took the memo out of the trash, as the loop does.
            #expect(try postgres.sql("SELECT count(*) FROM memo_changes WHERE vkind = 4", database: fast) == "0")
        }
        if fallback == .clockNearItsCap {
            #expect(try postgres.sql("SELECT max(insert_micros) FROM memos", database: fast)
                        == String(MemoDates.latestMicros))
        }
    }

    /// The pass's checks probe the ids' index entries one by one: a check of every id at once (`id = ANY(ids)`)
    /// was planned as a scan of the whole table, by the plan PL/pgSQL kept from the first batches, for every
    /// batch after (400 batches of 50 read 4 million rows where the loop read none).
    @Test func thePassesChecksReadTheIndexesNotEveryRow() throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        try PostgresStore(uri: postgres.uri(database)).close()
        let now: Int64 = 1_700_000_000_000_000
        // Twelve batches in one session: PL/pgSQL's plans of the checks are generic from the sixth on.
        let calls = (0..<12).map { call(fresh(50), now: now + Int64($0) * 1_000) + ";" }.joined(separator: "\n")
        let lines = try postgres.sql("""
            BEGIN;
            \(calls)
            SELECT 'scans|' || sum(seq_scan) FROM pg_stat_xact_user_tables WHERE relname IN ('memos', 'memo_changes');
            COMMIT;
            """, database: database).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("R|(0,1,") }.count == 600)
        #expect(lines.filter { $0.hasPrefix("scans|") } == ["scans|0"])
    }
}
