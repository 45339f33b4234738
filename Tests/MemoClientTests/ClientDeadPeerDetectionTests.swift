import ClientTestSupport
import Foundation
import MemoClient
import MemoNet
import ServerTestSupport
import Testing

/// Both ends of a memo connection ask the kernel to find a dead peer: keepalive probes and a user timeout. A
/// socket without SO_KEEPALIVE has no keepalive timer, so `ss -o` showing one on each end is the kernel's word
/// that the options took.
@Suite("Client and server: dead-peer detection")
struct ClientDeadPeerDetectionTests {
    /// The established TCP connections with `port` at either end, with their timers.
    private func sockets(port: UInt16) throws -> [String] {
        try establishedTCP("( sport = :\(port) or dport = :\(port) )", timers: true)
    }

    /// `ss`'s time left (`14sec`, `7.508ms`, `1min30sec`) in seconds, or nil when it is not one.
    static func seconds(_ text: String) -> Double? {
        var total = 0.0
        var rest = Substring(text)
        let units: [(String, Double)] = [("min", 60), ("sec", 1), ("ms", 0.001)]
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            guard let (unit, scale) = units.first(where: { rest.hasPrefix($0.0) }) else { return nil }
            total += value * scale
            rest = rest.dropFirst(unit.count)
        }
        return total
    }

    @Test func ssTimesLeftReadInSeconds() {
        #expect(Self.seconds("14sec") == 14)
        #expect(Self.seconds("7.508ms") == 0.007508)
        #expect(Self.seconds("1min30sec") == 90)
        #expect(Self.seconds("soon") == nil)
        #expect(Self.seconds("") == 0)
    }

    @Test func acceptedAndClientSocketsBothRunTheKernelKeepaliveTimer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let port = server.address.port
        // The client is welcomed, so both sockets exist. While sent bytes wait for their acknowledgement `ss`
        // shows the retransmission timer instead (`timer:(on,...)`): poll until both sockets are quiet.
        let deadline = ContinuousClock.now + .seconds(20)
        var lines = try sockets(port: port)
        while lines.count < 2 || lines.contains(where: { $0.contains("timer:(on,") }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            lines = try sockets(port: port)
        }
        #expect(lines.count == 2, "\(lines)")
        for line in lines {
            // timer:(keepalive,14sec,0): the first probe after 15 s of silence (the kernel default is 2 hours).
            #expect(line.contains("timer:(keepalive,"), "\(line)")
            // `ss` writes the time left as `14sec`, `7.508ms` or `1min30sec`, and nothing when a probe is due (a
            // test held up past 15 s of silence on a loaded machine): anything up to 15 s is ours.
            let left = line.split(separator: "timer:(keepalive,").last
                .flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).first }
            #expect(left.flatMap { Self.seconds(String($0)) }.map { $0 <= 15 } == true, "\(line)")
        }
    }
}
