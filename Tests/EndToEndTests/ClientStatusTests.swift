import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoTestSupport
import PostgresTestSupport
import ServerTestSupport
import Testing

/// The JSON objects of `status --json`, one per line.
private func objects(_ out: String) throws -> [[String: Any]] {
    try out.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

private func fields(_ object: [String: Any]) -> [String: Any] {
    object["fields"] as? [String: Any] ?? [:]
}

/// Two `memo-server` processes on one new database of the shared test cluster, started one after the other.
private struct TwoServersOnPostgres {
    let cluster: TestPostgres
    let database: String
    let certificates: TestCertificates
    /// Started in this order: the first one's feed backend is the older.
    let first, second: ServerProcess
    private let data: TemporaryDirectory

    /// - Parameters:
    ///   - uri: the store's URI, from the cluster and the database's name.
    ///   - options: more `serve` options for both.
    init(uri: (TestPostgres, String) -> String = { $0.uri($1) }, options: [String] = []) throws {
        cluster = try TestPostgres.shared()
        database = try cluster.makeDatabaseName()
        certificates = try TestCertificates()
        data = try TemporaryDirectory()
        let arguments = ["--store", uri(cluster, database), "--certs", certificates.path, "--listen", "127.0.0.1:0"]
            + options
        let first = try ServerProcess(arguments: arguments, directory: data)
        do {
            second = try ServerProcess(arguments: arguments, directory: data)
        } catch {
            first.stop()
            throw error
        }
        self.first = first
    }

    /// Both addresses, for `--server`.
    var addresses: String { "\(first.address),\(second.address)" }

    func stop() {
        first.stop()
        second.stop()
    }
}

@Suite("memo-client status: one row per server, exit codes for probes", .serialized)
struct ClientStatusTests {
    @Test func aReadyServerGivesExitZeroAndItsFields() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path,
                        "--listen", "127.0.0.1:0"], directory: data)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        #expect(try runClient(["add", "하나"], server: server.address, certs: certificates.path).status == 0)
        let (status, out, err) = try runClient(["status", "--json"], server: server.address, certs: certificates.path)
        #expect(status == 0, "\(err)")
        let rows = try objects(out)
        try #require(rows.count == 1)
        #expect(rows[0]["server"] as? String == server.address)
        #expect(rows[0]["reachable"] as? Bool == true)
        #expect(rows[0]["ready"] as? Bool == true)
        #expect(rows[0]["reason"] is NSNull)
        let values = fields(rows[0])
        #expect(values["revision.head"] as? Int == 1)
        #expect(values["memos.count"] as? Int == 1)
        #expect(values["store.kind"] as? String == "sqlite")
        #expect(values["store.location"] as? String == data.path + "/memos.sqlite")
        #expect(values["connections.read_write"] as? Int == 1)
        #expect(values["postgres.database_head"] is NSNull)
        // For scripts (stdout not a terminal): tab-separated columns, no header.
        let (plainStatus, plain, _) = try runClient(["status"], server: server.address, certs: certificates.path)
        #expect(plainStatus == 0)
        let cells = plain.trimmingCharacters(in: .newlines).split(separator: "\t", omittingEmptySubsequences: false)
        #expect(cells.count == 10)
        #expect(cells.prefix(4) == [Substring(server.address), "ready", "1", "1"])
    }

    @Test func aServerThatIsDownIsARowSayingWhyAndExitsSix() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0"], directory: data)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let down = "127.0.0.1:\(try freeLoopbackPort())"
        let (status, out, err) = try runClient(
            ["status", "--json", "--timeout", "2"], server: "\(server.address),\(down)", certs: certificates.path)
        #expect(status == 6, "\(err)")
        let rows = try objects(out)
        try #require(rows.count == 2)
        #expect(rows[0]["server"] as? String == server.address)
        #expect(rows[0]["ready"] as? Bool == true)
        #expect(rows[1]["server"] as? String == down)
        #expect(rows[1]["reachable"] as? Bool == false)
        #expect(rows[1]["ready"] as? Bool == false)
        #expect((rows[1]["reason"] as? String)?.contains("connection refused") == true, "\(rows[1])")
        // Alone, the down server is one row, and the exit code says unreachable.
        let (alone, line, _) = try runClient(["status", "--timeout", "2"], server: down, certs: certificates.path)
        #expect(alone == 6)
        #expect(line.hasPrefix(down + "\tunreachable\t"))
    }

    @Test(.enabled(if: postgresTestsEnabled))
    func twoServersOnPostgresEachGiveARowAndNeitherShowsThePassword() throws {
        // The test cluster trusts every local connection: the password is never asked for, only carried.
        let pair = try TwoServersOnPostgres(uri: { "postgresql://memo:s3cret-pw@127.0.0.1:\($0.port)/\($1)" })
        defer { pair.stop() }
        let (cluster, database, certificates, first, second) =
            (pair.cluster, pair.database, pair.certificates, pair.first, pair.second)
        #expect(try runClient(["add", "공유"], server: first.address, certs: certificates.path).status == 0)
        let servers = pair.addresses
        var rows: [[String: Any]] = []
        var last = (status: Int32(-1), out: "", err: "")
        let deadline = Date().addingTimeInterval(30)
        // The second server shows the write after its feed delay: asked again until both are at revision 1.
        repeat {
            last = try runClient(["status", "--json"], server: servers, certs: certificates.path)
            rows = try objects(last.out)
        } while rows.count == 2 && !rows.allSatisfy({ fields($0)["revision.head"] as? Int == 1 }) && Date() < deadline
        #expect(last.status == 0, "\(last.err)")
        try #require(rows.count == 2)
        #expect(rows.map { $0["server"] as? String } == [first.address, second.address])
        for row in rows {
            let values = fields(row)
            #expect(row["ready"] as? Bool == true)
            #expect(values["store.kind"] as? String == "postgresql")
            #expect(values["store.location"] as? String
                == "postgresql://memo:***@127.0.0.1:\(cluster.port)/\(database)")
            #expect(values["revision.head"] as? Int == 1)
            #expect(values["postgres.applied_revision"] as? Int == 1)
            #expect(values["postgres.database_head"] as? Int == 1)
            #expect(values["postgres.feed_progress_age.seconds"] is Double)
        }
        #expect(fields(rows[0])["postgres.writer.batches"] as? Int == 1)
        #expect(fields(rows[0])["postgres.writer.last_batch_size"] as? Int == 1)
        #expect(fields(rows[1])["postgres.writer.batches"] as? Int == 0)
        #expect(!last.out.contains("s3cret"))
        // The table for people names both, ready.
        let (_, plain, _) = try runClient(["status"], server: servers, certs: certificates.path)
        #expect(plain.split(separator: "\n").map { $0.split(separator: "\t")[1] } == ["ready", "ready"])
    }

    @Test(.enabled(if: postgresTestsEnabled))
    func aServerWhoseFeedBackendIsStoppedIsNotReadyWithItsReasonAndExitsEightThenLetsGoAndServesAgain() throws {
        // The feed may go 1 s without confirming it holds every change; a call to PostgreSQL may wait 15 s. A
        // stopped feed backend answers nothing: its server is not ready from 1 s on, and lets go at 15 s.
        let pair = try TwoServersOnPostgres(options: ["--max-feed-lag", "1", "--storage-timeout", "15"])
        defer { pair.stop() }
        let (certificates, first, second) = (pair.certificates, pair.first, pair.second)
        #expect(try runClient(["add", "공유"], server: first.address, certs: certificates.path).status == 0)
        // Each server's feed connected when it started, one after the other: the second backend is the second's.
        let backends = try pair.cluster.feedBackends(database: pair.database)
        try #require(backends.count == 2, "\(backends)")
        let stopped = backends[1]
        kill(stopped, SIGSTOP)
        defer { kill(stopped, SIGCONT) }
        let servers = pair.addresses
        // Asked until the second server says it is not ready (its next read of the changes table, within a second,
        // gets no answer); that answer is the one checked.
        var json = (status: Int32(-1), out: "", err: "")
        var rows: [[String: Any]] = []
        #expect(try pollUntil {
            json = try runClient(["status", "--json"], server: servers, certs: certificates.path)
            rows = try objects(json.out)
            return rows.count == 2 && rows[1]["ready"] as? Bool == false
        }, "\(json)")
        #expect(json.status == 8, "\(json.err)")
        try #require(rows.count == 2)
        #expect(rows.map { $0["server"] as? String } == [first.address, second.address])
        #expect(rows[0]["ready"] as? Bool == true)
        #expect(rows[0]["reason"] is NSNull)
        #expect(rows[1]["reachable"] as? Bool == true)
        let reason = try #require(rows[1]["reason"] as? String, "\(rows[1])")
        #expect(reason.hasPrefix("feed lagging "), "\(reason)")
        #expect(fields(rows[1])["store.kind"] as? String == "postgresql")
        // The table for scripts: the same two rows, the reason in DETAIL (the last column), the same exit code.
        var plain = (status: Int32(-1), out: "", err: "")
        var cells: [[Substring]] = []
        #expect(try pollUntil {
            plain = try runClient(["status"], server: servers, certs: certificates.path)
            cells = plain.out.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
            return cells.count == 2 && cells[1].count == 10 && cells[1][1] == "not-ready"
        }, "\(plain)")
        #expect(plain.status == 8, "\(plain.err)")
        try #require(cells.count == 2 && cells.allSatisfy { $0.count == 10 })
        #expect(cells[0].prefix(2) == [Substring(first.address), "ready"])
        #expect(cells[0][9] == "")
        #expect(cells[1].prefix(2) == [Substring(second.address), "not-ready"])
        #expect(cells[1][9].hasPrefix("feed lagging "), "\(cells[1])")
        // When the call's deadline ends the wait, the second server lets go and reloads on a new connection (the
        // stopped backend stays stopped): both are ready again.
        #expect(pollUntil(seconds: 60) { second.log.contains("cannot follow the database (feed lagging ") },
                "\(second.log)")
        #expect(try pollUntil(seconds: 60) {
            json = try runClient(["status", "--json"], server: servers, certs: certificates.path)
            return json.status == 0
        }, "\(json)")
        #expect(pollUntil(seconds: 10) { second.log.contains("reloaded a snapshot at revision 1") }, "\(second.log)")
    }
}
