import Foundation
@testable import MemoPostgres
import MemoTestSupport
import PostgresTestSupport
import Testing

@Suite("PostgreSQL: what memo_write reads under the head lock", .enabled(if: postgresTestsEnabled))
struct PostgresWritePlanTests {
    /// `memo_write` called as a server does, `count` creates of 64-byte contents, with the caller's last revision
    /// `after`; returns the statement (a count of the rows with status `status`).
    private func write(count: Int, after: String, status: Int) -> String {
        """
        SELECT count(*) FILTER (WHERE w.o_status = \(status)) FROM memo_write(
            array_fill(1::smallint, ARRAY[\(count)]), ARRAY(SELECT gen_random_uuid() FROM generate_series(1, \(count))),
            array_fill(convert_to(repeat('x', 64), 'UTF8'), ARRAY[\(count)]), array_fill(NULL::bigint, ARRAY[\(count)]),
            array_fill(NULL::bigint, ARRAY[\(count)]), array_fill(NULL::bigint, ARRAY[\(count)]),
            (extract(epoch FROM clock_timestamp()) * 1e6)::bigint, \(after), array_fill(''::text, ARRAY[\(count)]),
            array_fill(''::text, ARRAY[\(count)]), array_fill(NULL::bigint, ARRAY[\(count)]),
            array_fill(false, ARRAY[\(count)]), 20, true) w
        """
    }

    /// A batch that follows another server's returns that server's changes (status 5) from a range of the revision
    /// index: a plan that scans every change (which PL/pgSQL made, and kept, while the table was small or not yet
    /// analyzed) held the head lock for milliseconds at 20,000 changes while the other servers waited.
    @Test func theOtherServersChangesAreReadFromARangeOfTheRevisionIndexNotAScanOfEveryChange() throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        try PostgresStore(uri: postgres.uri(database)).close()
        // One server's batch of 300 creates, then another server's batch whose last revision was 100.
        let made = try postgres.sql(write(count: 300, after: "9223372036854775807", status: 0), database: database)
        #expect(made.trimmingCharacters(in: .whitespacesAndNewlines) == "300")
        let lines = try postgres.sql("""
            BEGIN;
            \(write(count: 1, after: "100", status: 5));
            SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'memo_changes';
            COMMIT;
            """, database: database).split(separator: "\n").filter { $0.allSatisfy(\.isNumber) }
        // The 200 changes after revision 100 came back, and no statement of the call scanned the whole table.
        #expect(lines == ["200", "0"])
    }

    /// A create of an id that never had a row in `memo_changes` reads that table once (whether the id has versions
    /// or a trash entry), not once for the trash's delete, once for its update and once for the versions' cutoff,
    /// which only find nothing for a fresh id.
    @Test func aCreateOfAFreshIdReadsTheChangesOnceNotForTheTrashAndTheCutoff() throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        try PostgresStore(uri: postgres.uri(database)).close()
        let lines = try postgres.sql("""
            BEGIN;
            \(write(count: 50, after: "9223372036854775807", status: 0));
            SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables WHERE relname = 'memo_changes';
            COMMIT;
            """, database: database).split(separator: "\n").filter { $0.allSatisfy(\.isNumber) }
        // The 50 creates were made, with one read of the changes each (main's function made three each).
        #expect(lines == ["50", "50"])
    }
}
