import Foundation
import MemoCore
import MemoNet
import MemoTestSupport
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
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        // The test cluster trusts every local connection: the password is never asked for, only carried.
        let uri = "postgresql://memo:s3cret-pw@127.0.0.1:\(cluster.port)/\(database)"
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", uri, "--certs", certificates.path, "--listen", "127.0.0.1:0"]
        let first = try ServerProcess(arguments: arguments, directory: data)
        defer {
            first.signal(SIGTERM)
            _ = first.waitForExit()
        }
        let second = try ServerProcess(arguments: arguments, directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        #expect(try runClient(["add", "공유"], server: first.address, certs: certificates.path).status == 0)
        let servers = "\(first.address),\(second.address)"
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
}
