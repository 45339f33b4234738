import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

@Suite("TLS handshake and data in memory")
struct TLSHandshakeTests {
    @Test func handshakeCompletesWithTLS13AndReportsPeers() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            #expect(server.isServer)
            #expect(!client.isServer)
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.clientError == nil)
            #expect(outcome.serverError == nil)
            #expect(outcome.clientDone && outcome.serverDone)
            #expect(client.negotiatedProtocol == "TLSv1.3")
            #expect(server.negotiatedProtocol == "TLSv1.3")
            #expect(server.peerCommonName == "client")
            #expect(server.peerRole == .readWrite)
            #expect(client.peerCommonName == "memo server")
            #expect(client.peerRole == .unknown)
        }
    }

    @Test func plaintextFlowsBothWaysIncludingA200KBMessage() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "127.0.0.1")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            try #require(outcome.clientDone && outcome.serverDone)

            try client.writePlaintext(Array("hello server".utf8))
            var received: [UInt8] = []
            #expect(try transfer(from: client, to: server, chunk: 1, into: &received) == .bytes(12))
            #expect(received == Array("hello server".utf8))

            let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
            try server.writePlaintext(big)
            #expect(server.outboundCount > big.count)  // several records, each with its overhead
            var fast: [UInt8] = []
            #expect(try transfer(from: server, to: client, chunk: 1 << 20, into: &fast) == .bytes(big.count))
            #expect(fast == big)

            // The same message again, fed in odd-sized pieces that split records and headers.
            try server.writePlaintext(big[...])
            var slow: [UInt8] = []
            _ = try transfer(from: server, to: client, chunk: 997, into: &slow)
            #expect(slow == big)
        }
    }

    @Test func closeNotifyIsReportedAsClosed() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            try #require(pumpHandshake(client: client, server: server).serverDone)
            try client.writePlaintext(Array("bye".utf8))
            client.shutdown()
            var received: [UInt8] = []
            var wire: [UInt8] = []
            client.takeOutbound(into: &wire)
            server.feed(wire)
            #expect(try server.readPlaintext(into: &received) == .bytes(3))
            #expect(try server.readPlaintext(into: &received) == .closed)
            #expect(server.peerClosed)
            #expect(received == Array("bye".utf8))
        }
    }

    @Test func releaseBuffersShrinksAnIdleEngine() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            try #require(pumpHandshake(client: client, server: server).serverDone)
            try server.writePlaintext([UInt8](repeating: 7, count: 200_000))
            var received: [UInt8] = []
            _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &received)
            #expect(client.retainedBufferBytes > 200_000)
            client.releaseBuffers()
            server.releaseBuffers()
            #expect(client.retainedBufferBytes < 1_000)
            #expect(server.retainedBufferBytes < 1_000)

            // The engine still works afterwards.
            try server.writePlaintext(Array("again".utf8))
            received.removeAll()
            _ = try transfer(from: server, to: client, chunk: 100, into: &received)
            #expect(received == Array("again".utf8))
        }
    }

    @Test func writingBeforeTheHandshakeIsAnError() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            #expect(throws: TLSError.self) { try client.writePlaintext(Array("early".utf8)) }
        }
    }
}
