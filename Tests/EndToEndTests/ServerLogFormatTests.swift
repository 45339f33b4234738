import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Testing

/// The lines of a log written with `--log-format json`, each parsed; a line that is not a JSON object fails.
func jsonLines(_ log: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
    try log.split(separator: "\n", omittingEmptySubsequences: true).map { line in
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(line)", sourceLocation: sourceLocation)
    }
}

@Suite("memo-server's log: text or JSON lines, one line per event", .serialized)
struct ServerLogFormatTests {
    /// A reader of the log that stops reading (a stopped `tee`, a stalled journal, a terminal held with Ctrl-S)
    /// holds neither the server nor its exit. Before, a loop's log line into the full pipe held that loop: after
    /// about 300 connections (64 KiB of `open` and `close` lines) the server answered nobody, and a SIGTERM's own
    /// line held the exit too.
    @Test func aLogReaderThatStopsReadingHoldsNeitherTheServerNorItsExit() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let log = Pipe()  // read only at the end
        let server = try ServerProcess(
            arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0"],
            directory: data, standardError: log.fileHandleForWriting)
        try log.fileHandleForWriting.close()  // the server has its own copy
        // A server held by its log (the failure this test is for) answers no SIGTERM: it is killed.
        defer { if server.process.isRunning { server.signal(SIGKILL) } }
        let address = try SocketAddress(parsing: server.address)
        // Two lines a connection, about 300 bytes: 600 connections are nearly three times what the pipe holds.
        for number in 0..<600 {
            let client = try TestClient(address: address, identity: certificates.client())
            try client.hello()
            #expect(try client.request(.ping(nonce: UInt64(number))) == .pong(nonce: UInt64(number)))
            client.socket.close()
        }
        // Stopped with the pipe still full and unread: it exits once its wait for the reader (a second) is over.
        let exited = DispatchSemaphore(value: 0)
        server.process.terminationHandler = { _ in exited.signal() }
        server.signal(SIGTERM)
        #expect(exited.wait(timeout: .now() + 30) == .success, "the server did not exit")
        #expect(server.process.terminationStatus == 0)
        // What the pipe held: the first lines, whole and in order.
        let text = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = text.split(separator: "\n")
        #expect(lines.contains { $0.contains(" serving memory ") }, "\(lines.prefix(3))")
        #expect(lines.filter { $0.contains(" open conn=") }.first?.contains(" open conn=1 ") == true)
    }

    @Test func everyLineOfAJSONLogOfASessionIsAnObjectWithTimeLevelEventAndTheTextLinesFields() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path,
                        "--listen", "127.0.0.1:0", "--log-format", "json"],
            directory: data)
        let address = try SocketAddress(parsing: server.address)
        let writer = try TestClient(address: address, identity: certificates.client())
        try writer.hello()
        guard case .memo = try writer.request(.create(id: nil, insertMicros: nil, content: "첫 메모\nline two"))
        else { throw TestClient.Failure.closed }
        // A read-only certificate writing: refused, logged with the request's fields.
        let reader = try TestClient(address: address, identity: certificates.client("reader"))
        try reader.hello()
        guard case .error = try reader.request(.create(id: nil, insertMicros: nil, content: "no")) else {
            throw TestClient.Failure.closed
        }
        writer.socket.close()
        server.signal(SIGTERM)
        #expect(server.waitForExit() == 0)

        let records = try jsonLines(server.log)
        let time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
        for record in records {
            let stamp = try #require(record["time"] as? String, "\(record)")
            #expect(stamp.wholeMatch(of: time) != nil, "\(stamp)")
            #expect(["debug", "info", "warn", "error"].contains(record["level"] as? String ?? ""), "\(record)")
            #expect(record["event"] is String, "\(record)")
            #expect(record["message"] is String, "\(record)")
        }
        let events = records.compactMap { $0["event"] as? String }
        for event in ["certificates_loaded", "serving", "open", "refused", "close", "stopping", "stopped"] {
            #expect(events.contains(event), "\(event) missing from \(events)")
        }
        let open = try #require(records.first { $0["event"] as? String == "open" && $0["cn"] as? String == "client" })
        #expect(open["conn"] as? String == "1")
        #expect((open["peer"] as? String)?.hasPrefix("127.0.0.1:") == true)
        #expect(open["role"] as? String == "read-write")
        let refused = try #require(records.first { $0["event"] as? String == "refused" })
        #expect(refused["cn"] as? String == "reader")
        #expect(refused["op"] as? String == "create")
        #expect(refused["code"] as? String == "\(ErrorCode.permissionDenied.rawValue)")
        let close = try #require(
            records.first { $0["event"] as? String == "close" && $0["cn"] as? String == "client" })
        #expect(close["reason"] is String)
        let stopping = try #require(records.first { $0["event"] as? String == "stopping" })
        #expect(stopping["signal"] as? String == "SIGTERM")
    }

    @Test func aServerThatCannotStartSaysWhyAsAJSONFatalRecordInJSONMode() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let store = "sqlite:\(data.path)/memos.sqlite"
        let first = try ServerProcess(
            arguments: ["--store", store, "--certs", certificates.path, "--listen", "127.0.0.1:0"], directory: data)
        defer {
            first.signal(SIGTERM)
            _ = first.waitForExit()
        }
        let (status, out, err) = try runTool("memo-server", [
            "serve", "--store", store, "--certs", certificates.path, "--listen", "127.0.0.1:0", "--log-format", "json",
        ])
        #expect(status == 1 && out.isEmpty)
        let records = try jsonLines(err)
        #expect(records.count == 1, "\(err)")
        #expect(records.first?["event"] as? String == "fatal")
        #expect(records.first?["level"] as? String == "error")
        #expect((records.first?["reason"] as? String)?.contains("is in use by another memo-server") == true, "\(err)")
    }

    @Test func logLevelWarnLeavesOutInfoLinesAndBadValuesAreRefusedWithOneLine() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0",
                        "--log-level", "warn"],
            directory: data)
        let address = try SocketAddress(parsing: server.address)
        let client = try TestClient(address: address, identity: certificates.client())
        try client.hello()
        client.socket.close()
        server.signal(SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(!server.log.contains("open conn="), "\(server.log)")
        #expect(!server.log.contains("stopped cleanly"), "\(server.log)")

        let (status, _, err) = try runTool("memo-server", ["serve", "--log-format", "xml"])
        #expect(status == 2)
        #expect(err.hasPrefix("memo-server: --log-format takes text or json, not 'xml'\n"), "\(err)")
        let (levelStatus, _, levelErr) = try runTool("memo-server", ["serve", "--log-level", "loud"])
        #expect(levelStatus == 2)
        #expect(levelErr.hasPrefix("memo-server: --log-level takes debug, info, warn or error, not 'loud'\n"))
    }
}

@Suite("memo-server's log over PostgreSQL: libpq's multi-line errors", .enabled(if: postgresTestsEnabled),
       .serialized)
struct PostgresLogLineTests {
    @Test func aLibpqErrorWithDetailAndContextIsOneLogLineAndTheClientSaysStorageErrorOnce() throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", cluster.uri(database), "--certs", certificates.path, "--listen", "127.0.0.1:0"],
            directory: data)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        // PostgreSQL refuses every write with a message over several lines: ERROR, DETAIL, HINT and CONTEXT.
        _ = try cluster.sql("""
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'writes refused by the test' USING DETAIL = 'the detail line',
                HINT = 'the hint line'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT ON memo_changes FOR EACH ROW EXECUTE FUNCTION refuse();
            """, database: database)
        let (status, _, err) = try runClient(["add", "refused"], server: server.address, certs: certificates.path)
        #expect(status != 0)
        #expect(err.components(separatedBy: "storage error:").count == 2, "\(err)")
        #expect(!err.contains("storage error: storage error:"), "\(err)")

        // The log line names the write and carries every line of PostgreSQL's message.
        let lines = server.log.split(separator: "\n")
        let refusal = try #require(lines.first { $0.contains("writes refused by the test") }, "\(server.log)")
        #expect(refusal.contains("storage error conn="), "\(refusal)")
        #expect(refusal.contains("the detail line") && refusal.contains("the hint line"), "\(refusal)")
        #expect(refusal.contains("CONTEXT:"), "\(refusal)")
        #expect(!lines.contains { $0.hasPrefix("DETAIL") || $0.hasPrefix("CONTEXT") }, "\(server.log)")
    }
}
