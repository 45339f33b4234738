import Foundation
import MemoTestSupport
import PostgresTestSupport
import Testing

@testable import memo_torture

/// The gray run's backend faults stop a backend only while it waits idle for its client (IdleStop): a backend
/// stopped inside a statement keeps its locks, and then no server, healthy or not, can write (the claimer's
/// `stop-writer-backend` failures: A's writer backend stopped inside `memo_write`, B's writes refused 501).
@Suite("memo-torture gray: backend faults stop an idle backend", .serialized)
struct GrayIdleStopTests {
    @Test func aBackendHoldingARowLockIsStoppedOnlyOnceItIsIdleAndTheLockIsFreeForOthers() throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        try postgres.sql("CREATE TABLE head (one boolean PRIMARY KEY); INSERT INTO head VALUES (true)",
                         database: database)
        // The holder: a transaction that keeps the row locked through a 2 s statement, then an idle session (its
        // psql runs a shell command meanwhile).
        let script = "BEGIN; SELECT one FROM head FOR UPDATE; SELECT pg_sleep(2); COMMIT; \\! sleep 30\n"
        let conninfo = "host=127.0.0.1 port=\(postgres.port) user=memo dbname=\(database) application_name=holder"
        let psqlPID = try TestPostgres.run("/bin/sh", ["-c",
            "printf '%s' \"$1\" | \(postgres.binaries)/psql -X -q -d \"$2\" >/dev/null 2>&1 & echo $!", "sh",
            script, conninfo])
        let psql = try #require(pid_t(psqlPID))
        defer { kill(psql, SIGKILL) }
        var backend: pid_t?
        #expect(try pollUntil(seconds: 30) {
            backend = pid_t(try postgres.sql(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'holder' AND wait_event = 'PgSleep'",
                database: "postgres"))
            return backend != nil
        })
        let pid = try #require(backend)
        defer { kill(pid, SIGCONT) }

        // Asked to stop it mid-statement, holding the lock: it waits until the backend is idle.
        let stopped = IdleStop.stop(pid, until: .now + .seconds(30)) { pid in
            (try? postgres.sql(IdleStop.query(pid), database: "postgres")) == "t"
        }
        #expect(stopped)
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        #expect(stat.split(separator: ")").last?.split(separator: " ").first == "T", "\(stat)")
        // The row is free for another session while the holder stays stopped.
        let other = try postgres.sql("SET lock_timeout = '5s'; SELECT one FROM head FOR UPDATE", database: database)
        #expect(other.split(separator: "\n").last == "t", "\(other)")
    }
}
