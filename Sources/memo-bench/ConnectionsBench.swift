import Foundation
import MemoCLI
import MemoNet
import MemoProbe
import MemoTLS
import MemoWire

/// Where to reach a server and with which certificate; shared by the network modes.
struct BenchTarget {
    var server = "127.0.0.1:7420"
    var certs = "certs"
    var serverPID: Int32?

    init(_ arguments: inout Arguments) throws(UsageError) {
        server = try arguments.option("--server") ?? server
        certs = try arguments.option("--certs") ?? certs
        serverPID = try arguments.integer("--server-pid", in: 1...Int(Int32.max)).map { Int32($0) }
    }

    var identity: ProbeConnection.Identity {
        ProbeConnection.Identity(ca: certs + "/ca.crt", certificate: certs + "/client.crt", key: certs + "/client.key")
    }

    /// The first of the addresses in --server.
    func address() throws -> SocketAddress { try addresses()[0] }

    /// Every address in --server (servers over one PostgreSQL, separated by commas); connections are spread
    /// over them in turn.
    func addresses() throws -> [SocketAddress] {
        try server.split(separator: ",").map { try SocketAddress(parsing: String($0)) }
    }

    /// A connection that has done TLS and hello; `context` is made once and shared, as a real client would.
    func connect(_ context: TLSContext) throws -> ProbeConnection {
        let connection = try ProbeConnection(address: try address(), context: context)
        try connection.hello()
        return connection
    }

    /// The server's resident memory in KiB, from /proc (nil without --server-pid).
    func serverRSS() -> Int? {
        serverPID.flatMap { residentKiB(of: "\($0)") }
    }

    /// The server's CPU seconds (user + system), from /proc (nil without --server-pid).
    func serverCPUSeconds() -> Double? {
        guard let serverPID, let stat = try? String(contentsOfFile: "/proc/\(serverPID)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// `memo-bench connections`: N idle TLS connections held open, then the server's memory per connection.
struct ConnectionsBench {
    var target: BenchTarget
    var count = 1000
    var hold = 2.0
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        count = try arguments.integer("--count", in: 1...1_000_000) ?? count
        hold = try arguments.seconds("--hold") ?? hold
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() throws {
        raiseDescriptorLimit()
        let context = try ProbeConnection.context(for: target.identity)
        let before = target.serverRSS()
        var connections: [ProbeConnection] = []
        connections.reserveCapacity(count)
        let clock = ContinuousClock()
        let started = clock.now
        for _ in 0..<count { connections.append(try target.connect(context)) }
        let openSeconds = (clock.now - started).milliseconds / 1000
        Thread.sleep(forTimeInterval: hold)
        // Every connection is still served after the hold.
        for connection in connections.prefix(10) { _ = try connection.request(.ping(nonce: 1)) }
        let after = target.serverRSS()
        Self.report(label: "connections", count: count, seconds: openSeconds, before: before, after: after, json: json)
        withExtendedLifetime(connections) {}
    }
}

extension ConnectionsBench {
    /// Prints the connections figures (shared with the Redis mode).
    static func report(label: String, count: Int, seconds: Double, before: Int?, after: Int?, json: Bool) {
        let perConnection = before.flatMap { b in after.map { Double($0 - b) / Double(count) } }
        let rate = Double(count) / seconds
        if json {
            var fields = ["\"op\":\"\(label)\"", "\"count\":\(count)",
                          String(format: "\"handshakes_per_sec\":%.1f", rate)]
            if let before, let after, let perConnection {
                fields += ["\"server_rss_before_kb\":\(before)", "\"server_rss_after_kb\":\(after)",
                           String(format: "\"kb_per_connection\":%.2f", perConnection)]
            }
            print("{" + fields.joined(separator: ",") + "}")
        } else {
            print(String(format: "%@: %d opened in %.2f s (%.0f TLS handshakes per second)", label, count, seconds,
                         rate))
            if let before, let after, let perConnection {
                print(String(format: "server RSS: %d KiB before, %d KiB after: %.2f KiB per connection",
                             before, after, perConnection))
            }
        }
    }
}

/// `memo-bench handshakes`: full TLS handshakes per second from several threads.
struct HandshakesBench {
    var target: BenchTarget
    var clients = 4
    var count = 2000
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        clients = try arguments.integer("--clients", in: 1...1024) ?? clients
        count = try arguments.integer("--count", in: 1...10_000_000) ?? count
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() throws {
        let target = target
        let context = try ProbeConnection.context(for: target.identity)
        let perClient = (0..<clients).map { count / clients + ($0 < count % clients ? 1 : 0) }
        let results = Recorder<Result<[Double], any Error>>()
        let clock = ContinuousClock()
        let started = clock.now
        for share in perClient {
            Thread.detachNewThread {
                results.record(Result {
                    try (0..<share).map { _ in
                        let begin = clock.now
                        let connection = try target.connect(context)
                        let elapsed = (clock.now - begin).milliseconds
                        connection.socket.close()
                        return elapsed
                    }
                })
            }
        }
        let all = results.waitFor(clients)
        let elapsed = (clock.now - started).milliseconds / 1000
        let latencies = try all.flatMap { try $0.get() }
        let stats = LatencyStats(latencies)
        let rate = Double(latencies.count) / elapsed
        if json {
            print(String(format: "{\"op\":\"handshakes\",\"clients\":%d,\"count\":%d,\"handshakes_per_sec\":%.1f,"
                         + "\"p50_ms\":%.3f,\"p99_ms\":%.3f}", clients, latencies.count, rate, stats.p50, stats.p99))
        } else {
            print(String(format: "handshakes: %d from %d threads in %.2f s: %.0f per second, p50 %.3f ms, p99 %.3f ms",
                         latencies.count, clients, elapsed, rate, stats.p50, stats.p99))
        }
    }
}

/// Collects results from threads.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every access to `values` holds `condition`.
    private let condition = NSCondition()
    private var values: [Value] = []

    func record(_ value: Value) {
        condition.lock()
        values.append(value)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `count` values are in.
    func waitFor(_ count: Int) -> [Value] {
        condition.lock()
        defer { condition.unlock() }
        while values.count < count { condition.wait() }
        return values
    }
}
