import MemoNet
import MemoTLS
import MemoTestSupport
import MemoTransport
import MemoWire
import TLSTestSupport
import Testing

/// Two `FramedTLSTransport`s, a server's and a client's, over embedded sockets: real TLS with certificates made
/// for the test, the bytes between the two sockets moved by hand.
private struct TransportPair {
    var server: FramedTLSTransport
    var client: FramedTLSTransport
    let serverSocket: TCPSocket
    let serverPeer: EmbeddedPeer
    let clientSocket: TCPSocket
    let clientPeer: EmbeddedPeer
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    var scratch: [UInt8] = []

    init(fixture: TLSFixture, clientContext: TLSContext? = nil) throws {
        server = FramedTLSTransport(tls: try TLSEngine(context: fixture.serverContext()))
        client = FramedTLSTransport(
            tls: try TLSEngine(context: clientContext ?? fixture.clientContext(), serverName: "localhost"))
        (serverSocket, serverPeer) = TCPSocket.embedded()
        (clientSocket, clientPeer) = TCPSocket.embedded()
    }

    /// Flushes both sides and carries what each wrote to the other's socket.
    mutating func shuttle() throws {
        try buffer.withUnsafeMutableBytes { scratch in
            _ = try server.flush(to: serverSocket, scratch: scratch)
            _ = try client.flush(to: clientSocket, scratch: scratch)
        }
        clientPeer.write(serverPeer.read())
        serverPeer.write(clientPeer.read())
    }

    mutating func readServer() throws -> FramedTLSTransport.ReadEnd {
        try buffer.withUnsafeMutableBytes { try server.read(from: serverSocket, through: $0) }
    }

    mutating func readClient() throws -> FramedTLSTransport.ReadEnd {
        try buffer.withUnsafeMutableBytes { try client.read(from: clientSocket, through: $0) }
    }

    /// Runs both handshakes to the end; returns what the server's last advance came to.
    mutating func handshake() throws -> FramedTLSTransport.Inbound {
        var serverSide = server.advance(scratch: &scratch)
        for _ in 0..<10 {
            if case .handshaking = client.advance(scratch: &scratch) {}
            try shuttle()
            _ = try readServer()
            serverSide = server.advance(scratch: &scratch)
            try shuttle()
            _ = try readClient()
            if case .handshaking = serverSide { continue }
            if client.tls.isHandshakeComplete { break }
        }
        if !client.tls.isHandshakeComplete { _ = client.advance(scratch: &scratch) }
        return serverSide
    }
}

@Suite struct FramedTLSTransportTests {
    @Test func framesSentAcrossManySmallReadsAreDeliveredWhole() throws {
        try withTemporaryDirectory { directory in
            var pair = try TransportPair(fixture: try TLSFixture(directory: directory))
            guard case .handshakeCompleted = try pair.handshake() else {
                Issue.record("the server's handshake did not complete")
                return
            }
            let frames = (1...3).map { Message.ping(nonce: UInt64($0)).frame(requestID: UInt32($0)) }
            for frame in frames { try pair.client.write(frame) }
            try pair.shuttle()
            // A 7-byte read buffer: each record arrives in many reads.
            var small = [UInt8](repeating: 0, count: 7)
            let end = try small.withUnsafeMutableBytes { try pair.server.read(from: pair.serverSocket, through: $0) }
            #expect(end == .drained)
            guard case .delivered(closeNotify: false) = pair.server.advance(scratch: &pair.scratch) else {
                Issue.record("no plaintext delivered")
                return
            }
            var received: [Message] = []
            while let frame = try pair.server.frames.next() { received.append(try Message(frame: frame)) }
            #expect(received == (1...3).map { Message.ping(nonce: UInt64($0)) })
            #expect(pair.server.frames.bufferedByteCount == 0)
        }
    }

    @Test func closeNotifyIsReportedOnceWithTheFramesBeforeIt() throws {
        try withTemporaryDirectory { directory in
            var pair = try TransportPair(fixture: try TLSFixture(directory: directory))
            _ = try pair.handshake()
            try pair.client.write(Message.ping(nonce: 9).frame(requestID: 4))
            pair.client.closeNotify()
            try pair.shuttle()
            _ = try pair.readServer()
            guard case .delivered(closeNotify: true) = pair.server.advance(scratch: &pair.scratch) else {
                Issue.record("close_notify not reported")
                return
            }
            #expect(pair.server.closeNotifyReceived)
            let frame = try #require(try pair.server.frames.next())
            #expect(try Message(frame: frame) == .ping(nonce: 9))
            guard case .delivered(closeNotify: false) = pair.server.advance(scratch: &pair.scratch) else {
                Issue.record("close_notify reported twice")
                return
            }
        }
    }

    @Test func aClientWithoutACertificateFailsTheServersHandshakeWithAReason() throws {
        try withTemporaryDirectory { directory in
            let fixture = try TLSFixture(directory: directory)
            var pair = try TransportPair(
                fixture: fixture, clientContext: try fixture.clientContext(certificate: .some(nil), key: .some(nil)))
            let outcome = try pair.handshake()
            guard case .failed(_, inHandshake: true) = outcome else {
                Issue.record("the handshake did not fail: \(outcome)")
                return
            }
            #expect(outcome.reason?.hasPrefix("TLS handshake failed: ") == true)
        }
    }

    @Test func ciphertextTheSocketRefusesIsHeldUntilItIsWritableAndTheEndOfStreamIsReported() throws {
        try withTemporaryDirectory { directory in
            var pair = try TransportPair(fixture: try TLSFixture(directory: directory))
            _ = try pair.handshake()
            pair.clientPeer.sendWindow = 10
            try pair.client.write([UInt8](repeating: 1, count: 5000))
            let blocked = try pair.buffer.withUnsafeMutableBytes {
                try pair.client.flush(to: pair.clientSocket, scratch: $0)
            }
            #expect(blocked == .blocked)
            #expect(!pair.client.isFlushed)
            #expect(pair.client.ciphertextRetainedBytes > 0)
            #expect(pair.clientPeer.read().count == 10)
            pair.clientPeer.sendWindow = Int.max
            let drained = try pair.buffer.withUnsafeMutableBytes {
                try pair.client.flush(to: pair.clientSocket, scratch: $0)
            }
            #expect(drained == .drained)
            #expect(pair.client.isFlushed)
            #expect(pair.clientPeer.read().count > 5000)
            pair.serverPeer.end()
            #expect(try pair.readServer() == .endOfFile)
        }
    }
}
