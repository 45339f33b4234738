import Foundation
import Glibc
import MemoModel
import MemoNet
@testable import MemoPostgres
import MemoProbe
@testable import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// The value of one sample (`name` with its labels exactly as written, e.g. `memo_connections{role="read_only"}`)
/// in a Prometheus exposition, nil when absent.
func sample(_ exposition: String, _ series: String) -> Double? {
    for line in exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

/// Polls `condition` every 20 ms until it holds or `seconds` pass. - Returns: whether it held.
func eventually(within seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

@Suite("status and /metrics: what a server says about itself")
struct StatusMetricsTests {
    @Test func statusReportsTheStoreConnectionsAndSubscribersToAnyRole() throws {
        let server = try TestServer()
        defer { server.stop() }
        let writer = try server.connect()
        _ = try writer.send(.subscribe(after: nil))
        for index in 0..<2 {
            _ = try writer.request(.create(id: nil, insertMicros: nil, content: "memo \(index)"))
        }
        let reader = try server.connect("reader")
        guard case .statusReport(let report) = try reader.request(.status) else {
            Issue.record("no status report")
            return
        }
        #expect(report.ready)
        #expect(report.reason.isEmpty)
        #expect(report["revision.head"] == .integer(2))
        #expect(report["memos.count"] == .integer(2))
        #expect(report["connections.read_write"] == .integer(1))
        #expect(report["connections.read_only"] == .integer(1))
        #expect(report["subscribers"] == .integer(1))
        #expect(report["store.kind"] == .text("memory"))
        #expect(report["store.location"] == StatusValue.none)
        #expect(report["protocol.version"] == .integer(Int64(WireProtocol.version)))
        #expect(report["tls.records"] == .text("own"))
        #expect(report["postgres.applied_revision"] == StatusValue.none)
        guard case .integer(let expires)? = report["certificate.server.expires"] else {
            Issue.record("no certificate expiry")
            return
        }
        // The test certificates are valid for a day.
        let now = Int64(Date().timeIntervalSince1970)
        #expect(expires > now && expires <= now + 86_400 + 60)
        // The server's own API gives the same answer.
        #expect(server.server.status()["revision.head"] == .integer(2))
    }

    @Test func metricsCountRequestsDeliveriesAndHandshakesAndPassPromtool() throws {
        let server = try TestServer(metrics: true)
        defer { server.stop() }
        let metrics = try #require(server.server.metricsAddress)
        let subscriber = try server.connect()
        _ = try subscriber.send(.subscribe(after: 0))
        _ = try subscriber.receive { $0.type == Message.Kind.subscribed.rawValue }
        let writer = try server.connect()
        for index in 0..<3 {
            _ = try writer.request(.create(id: nil, insertMicros: nil, content: "memo \(index)"))
        }
        guard case .error(.notFound, _) = try writer.request(.get(id: UUID())) else {
            Issue.record("a get of a missing memo was not refused")
            return
        }
        _ = try writer.request(.ping(nonce: 1))
        for _ in 0..<3 { _ = try subscriber.receive { $0.type == Message.Kind.change.rawValue } }
        var text = ""
        #expect(try eventually {
            text = try httpRequest(metrics, "/metrics").body
            return sample(text, "memo_deliveries_total") == 3
        })
        #expect(sample(text, #"memo_requests_total{kind="create",result="ok"}"#) == 3)
        #expect(sample(text, #"memo_requests_total{kind="get",result="refused"}"#) == 1)
        #expect(sample(text, #"memo_requests_total{kind="ping",result="ok"}"#) == 1)
        #expect(sample(text, #"memo_requests_total{kind="hello",result="ok"}"#) == 2)
        #expect(sample(text, #"memo_requests_total{kind="subscribe",result="ok"}"#) == 1)
        #expect(sample(text, "memo_request_duration_seconds_count") == 3)
        #expect(sample(text, #"memo_request_duration_seconds_bucket{le="+Inf"}"#) == 3)
        #expect(sample(text, "memo_delivery_delay_seconds_count") == 3)
        #expect(sample(text, "memo_head_revision") == 3)
        #expect(sample(text, "memo_subscribers") == 1)
        #expect(sample(text, #"memo_connections{role="read_write"}"#) == 2)
        #expect(sample(text, #"memo_tls_handshakes_total{result="ok"}"#) == 2)
        #expect(sample(text, "memo_ready") == 1)
        #expect((sample(text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((sample(text, "process_open_fds") ?? 0) > 3)
        let started = sample(text, "process_start_time_seconds") ?? 0
        #expect(abs(started - Date().timeIntervalSince1970) < 3600)
        // A connection that closes is counted by its reason.
        try writer.send(.goingAway(code: .shuttingDown, message: "bye"))
        #expect(try eventually {
            sample(try httpRequest(metrics, "/metrics").body, #"memo_connection_closes_total{reason="client"}"#) == 1
        })
        try checkWithPromtool(text)
    }

    /// Runs `promtool check metrics` on an exposition: it must exit 0 and print nothing (no lint problem).
    private func checkWithPromtool(_ text: String) throws {
        let path = try #require(installedTool("promtool"), "promtool is not installed (Debian: apt-get install prometheus)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "promtool: \(printed)")
        #expect(printed.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "promtool: \(printed)")
    }

    @Test func healthAndReadinessAnswerAndOnlyGetIsServed() throws {
        let server = try TestServer(metrics: true)
        defer { server.stop() }
        let metrics = try #require(server.server.metricsAddress)
        let health = try httpRequest(metrics, "/healthz")
        #expect(health.status == 200 && health.body == "ok\n")
        let ready = try httpRequest(metrics, "/readyz")
        #expect(ready.status == 200 && ready.body == "ready\n")
        let post = try httpRequest(metrics, "/metrics", method: "POST")
        #expect(post.status == 405)
        #expect(post.head.contains("\r\nAllow: GET"))
        #expect(try httpRequest(metrics, "/nothing").status == 404)
        let scrape = try httpRequest(metrics, "/metrics?x=1")
        #expect(scrape.status == 200)
        #expect(scrape.head.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(scrape.head.contains("Connection: close"))
    }

    @Test func readyzSaysShuttingDownWhileTheServerStops() throws {
        let store = MemoryStore()
        let server = try TestServer(store: store, metrics: true)
        let metrics = try #require(server.server.metricsAddress)
        // A subscriber that never reads its snapshot (more than the socket buffers hold) keeps the shutdown
        // waiting for its closing deadline, about 5 seconds.
        let big = String(repeating: "가", count: 20_000)
        for _ in 0..<300 {
            _ = store.storeState.planAndApply([.create(id: UUID(), content: big, insertMicros: nil)], nowMicros: 1)
        }
        let stalled = try server.connect()
        _ = try stalled.send(.subscribe(after: nil))
        #expect(eventually { server.server.status()["queued.bytes"].map { $0 != .integer(0) } ?? false })
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.stop()
            stopped.signal()
        }
        var answer: HTTPAnswer?
        #expect(eventually(within: 4) {
            answer = try? httpRequest(metrics, "/readyz")
            return answer?.status == 503
        })
        #expect(answer?.body == "not ready: shutting down\n")
        #expect(stopped.wait(timeout: .now() + 30) == .success)
        _ = stalled
    }

    @Test func aHostileScraperCannotHoldTheMetricsPortNorItsHealthChecksNorSlowTheMemoPort() throws {
        let server = try TestServer(metrics: true)
        defer { server.stop() }
        let metrics = try #require(server.server.metricsAddress)
        // Slowloris: as many connections as the listener takes, each with a request that never ends.
        let slow = try (0..<MetricsListener.maxConnections).map { _ in
            let connection = try RawConnection(metrics, timeout: 20)
            try connection.write("GET /metrics HTTP/1.1\r\nX-Slow: ")
            return connection
        }
        // A supervisor's health check still gets through, before any deadline: it makes room by closing the oldest
        // connection still without its request (accepted in order: the first slow one). Before, the port closed
        // every new connection until the slow ones' deadline, and a client reopening them kept the liveness check
        // failing.
        #expect(try httpRequest(metrics, "/healthz").status == 200)
        #expect(slow[0].closedUnanswered())
        // The memo port answers meanwhile, as always.
        let client = try server.connect()
        for nonce in 0..<200 { #expect(try client.request(.ping(nonce: UInt64(nonce))) == .pong(nonce: UInt64(nonce))) }
        // Each slow request left is cut at the read deadline with 408.
        for (index, connection) in slow.enumerated().dropFirst() {
            do {
                let answer = try connection.readAnswer()
                #expect(answer.status == 408, "slow connection \(index)")
            } catch {
                Issue.record("slow connection \(index): \(error) at \(Date())")
            }
        }
        // Then the port serves again (once the slow connections' slots are given back, a second after their
        // answer at most), and a request whose head is over the limit is refused with 431.
        #expect(eventually { (try? httpRequest(metrics, "/healthz"))?.status == 200 })
        let huge = try RawConnection(metrics)
        try huge.write("GET /metrics HTTP/1.1\r\nX-Huge: " + String(repeating: "a", count: 9 * 1024) + "\r\n\r\n")
        #expect(try huge.readAnswer().status == 431)
        #expect(try client.request(.ping(nonce: 7)) == .pong(nonce: 7))
    }
}

@Suite("status: a PostgreSQL URI is shown without its password")
struct PasswordRedactionTests {
    @Test(arguments: [
        ("postgresql://memo:secret@db:5432/memo", "postgresql://memo:***@db:5432/memo"),
        ("postgres://memo@db/memo", "postgres://memo@db/memo"),
        ("postgresql://memo:p%40ss@db/memo?sslmode=require", "postgresql://memo:***@db/memo?sslmode=require"),
        ("postgresql://db/memo?user=memo&password=secret&sslmode=require",
         "postgresql://db/memo?user=memo&password=***&sslmode=require"),
        ("host=db dbname=memo password='se cret' user=memo", "host=db dbname=memo password=*** user=memo"),
        ("host=db password=secret", "host=db password=***"),
    ])
    func thePasswordIsReplaced(uri: String, shown: String) {
        #expect(PostgresStore.withoutPassword(uri) == shown)
    }
}

@Suite("metrics: histogram buckets")
struct HistogramTests {
    @Test func eachBoundFallsInItsOwnBucketAndJustAboveInTheNext() {
        for (index, bound) in Histogram.bounds.enumerated() {
            let nanoseconds = UInt64((bound * 1e9).rounded())
            #expect(Histogram.bucket(nanoseconds) == index)
            #expect(Histogram.bucket(nanoseconds + 1) == index + 1)
        }
        var histogram = Histogram()
        histogram.observe(nanoseconds: 300_000, count: 16)
        #expect(histogram.buckets[2] == 16 && histogram.count == 16 && histogram.sumNanoseconds == 4_800_000)
    }
}

@Suite("metrics: close reasons")
struct CloseReasonTests {
    @Test(arguments: [
        ("server shutting down", CloseReason.shutdown),
        ("slow consumer: outbound buffer over 8388608 bytes", .slowConsumer),
        ("too many connections", .tooManyConnections),
        ("certificate revoked (serial 0A)", .revoked),
        ("TLS handshake failed: certificate unknown", .tls),
        ("handshake not finished within 10.0 s", .timeout),
        ("frame not finished within 30.0 s", .timeout),
        ("read failed: connection reset", .io),
        ("peer sent close_notify", .client),
        ("client is going away", .client),
        ("hung up", .client),
        ("malformed-frame: the payload has 3 bytes left over", .protocolError),
    ])
    func aCloseReasonIsSortedIntoItsLabel(reason: String, label: CloseReason) {
        #expect(CloseReason(reason: reason) == label)
    }
}
