import Foundation
import MemoClient
import MemoNet
import MemoTestSupport
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
            let seconds = line.split(separator: "timer:(keepalive,").last.flatMap { $0.split(separator: "sec").first }
            #expect(seconds.flatMap { Int($0) }.map { $0 <= 15 } == true, "\(line)")
        }
    }
}
