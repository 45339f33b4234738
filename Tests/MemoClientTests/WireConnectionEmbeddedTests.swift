import MemoNet
import MemoTestSupport
import MemoTLS
import MemoWire
import TLSTestSupport
import Testing

@testable import MemoClient

/// One `WireConnection` on an embedded loop (`EventLoop.embedded`, `TCPSocket.embedded()`): real TLS with
/// certificates made for the test and the real connection, but no socket and no thread; the server is a TLS
/// engine whose records the test carries to and from the socket's far end.
final class EmbeddedWire {
    let loop: EventLoop
    let peer: EmbeddedPeer
    let connection: WireConnection
    let server: TLSEngine
    let engine: TLSEngine
    private(set) var handshakes = 0
    private(set) var batches: [[Frame]] = []
    private(set) var ends: [TransportEnd] = []
    private var decoder = FrameDecoder()
    private var plaintext: [UInt8] = []

    init(fixture: TLSFixture) throws {
        loop = try EventLoop.embedded()
        server = try TLSEngine(context: fixture.serverContext())
        engine = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
        let (socket, peer) = TCPSocket.embedded()
        self.peer = peer
        connection = WireConnection(
            loop: loop, address: try SocketAddress(parsing: "127.0.0.1:1"), engine: engine)
        connection.onHandshakeDone = { [unowned self] in handshakes += 1 }
        connection.onFrames = { [unowned self] frames in batches.append(frames) }
        connection.onEnd = { [unowned self] end in ends.append(end) }
        connection.start(on: socket, connected: true)
    }

    deinit {
        // Closed first: its callbacks hold this object, which is going.
        connection.close(polite: false)
        loop.stopEmbedded()
    }

    /// Moves bytes both ways until neither side has more: the server's records to the client's socket, the loop
    /// run, what the client wrote to the server.
    func exchange() {
        for _ in 0..<50 {
            var moved = false
            if server.hasOutbound {
                var bytes: [UInt8] = []
                server.takeOutbound(into: &bytes)
                peer.write(bytes)
                moved = true
            }
            loop.run()
            let written = peer.read()
            if !written.isEmpty {
                server.feed(written)
                moved = true
            }
            if !server.isHandshakeComplete { _ = try? server.handshake() }
            if !moved { return }
        }
    }

    func handshake() throws {
        exchange()
        #expect(server.isHandshakeComplete)
        #expect(handshakes == 1)
    }

    /// The frames the client sent since the last call.
    func receivedByServer() throws -> [Frame] {
        _ = try? server.readPlaintext(into: &plaintext)
        decoder.append(plaintext)
        plaintext.removeAll()
        var frames: [Frame] = []
        while let frame = try decoder.next() { frames.append(frame) }
        return frames
    }

    /// The frames the client delivered, every batch joined.
    var delivered: [Frame] { batches.flatMap { $0 } }
}

@Suite struct WireConnectionEmbeddedTests {
    @Test func framesGoBothWaysAfterTheHandshakeAndOneReadsFramesComeAsOneBatch() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            let ping = Message.ping(nonce: 9).frame(requestID: 2)
            wire.connection.send(ping)
            wire.exchange()
            #expect(try wire.receivedByServer().map(\.requestID) == [2])
            let pongs = (1...3).map { Message.pong(nonce: UInt64($0)).frame(requestID: UInt32($0) + 1) }
            for pong in pongs { try wire.server.writePlaintext(pong) }
            wire.exchange()
            #expect(wire.batches.count == 1)
            #expect(wire.delivered.map(\.requestID) == [2, 3, 4])
            #expect(wire.ends.isEmpty)
        }
    }

    @Test func framesSentBeforeTheHandshakeEndsAreDropped() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            wire.connection.send(Message.ping(nonce: 1).frame(requestID: 2))
            try wire.handshake()
            #expect(try wire.receivedByServer().isEmpty)
        }
    }

    @Test func theServersCloseNotifyIsAnsweredWithOursAfterTheFramesThatCameWithIt() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            try wire.server.writePlaintext(Message.pong(nonce: 1).frame(requestID: 5))
            wire.server.shutdown()
            wire.exchange()
            #expect(wire.delivered.map(\.requestID) == [5])
            guard case .closeNotify = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not close_notify")
                return
            }
            #expect(wire.ends.count == 1)
            _ = try wire.receivedByServer()
            #expect(wire.server.peerClosed, "the client's close_notify")
            #expect(wire.peer.isClosed)
            #expect(!wire.engine.holdsKeyMaterial, "the keys go when the connection ends")
        }
    }

    @Test func aPoliteCloseSendsCloseNotifyReportsNoEndAndDiscardsTheKeys() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            wire.connection.close(polite: true)
            wire.exchange()
            _ = try wire.receivedByServer()
            #expect(wire.server.peerClosed)
            #expect(wire.peer.isClosed)
            #expect(wire.ends.isEmpty)
            #expect(!wire.engine.holdsKeyMaterial)
        }
    }

    @Test func anAbruptCloseSendsNoCloseNotify() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            wire.connection.close(polite: false)
            wire.exchange()
            _ = try wire.receivedByServer()
            #expect(!wire.server.peerClosed)
            #expect(wire.peer.isClosed)
        }
    }

    @Test func aRecordThatDoesNotVerifyEndsTheConnectionAsATLSError() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            // An application-data record whose bytes are not the server's encryption.
            wire.peer.write([0x17, 0x03, 0x03, 0x00, 0x20] + [UInt8](repeating: 0xAB, count: 32))
            wire.loop.run()
            guard case .tls = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not a TLS error")
                return
            }
            #expect(wire.peer.isClosed)
        }
    }

    @Test func theServerClosingTheStreamIsAnEndOfStream() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            wire.peer.end()
            wire.loop.run()
            guard case .endOfStream = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not end of stream")
                return
            }
        }
    }

    @Test func aHangUpReadsWhatIsLeftAndTheEndOfStreamBehindIt() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            try wire.server.writePlaintext(Message.pong(nonce: 1).frame(requestID: 7))
            var bytes: [UInt8] = []
            wire.server.takeOutbound(into: &bytes)
            wire.peer.write(bytes)
            wire.peer.end()
            // epoll's hang-up, delivered before any readable event.
            wire.connection.hangup()
            #expect(wire.delivered.map(\.requestID) == [7])
            guard case .endOfStream = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not end of stream")
                return
            }
        }
    }

    @Test func anEndOfStreamRightBehindTheLastFramesIsTakenInTheSameWakeUp() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            try wire.server.writePlaintext(Message.pong(nonce: 1).frame(requestID: 8))
            var bytes: [UInt8] = []
            wire.server.takeOutbound(into: &bytes)
            wire.peer.write(bytes)
            wire.peer.end()
            // One readable event, as epoll reports it: the frame and the end both, before any other work runs.
            wire.connection.readable()
            #expect(wire.delivered.map(\.requestID) == [8])
            guard case .endOfStream = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not end of stream")
                return
            }
        }
    }

    @Test func aFrameOverTheReceiveLimitEndsTheConnectionAsABadFrame() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            // A header announcing a frame one byte over the limit.
            var header = [UInt8](repeating: 0, count: WireProtocol.headerSize)
            let length = UInt32(WireConnection.receiveLimit + 1).bigEndian
            withUnsafeBytes(of: length) { header.replaceSubrange(0..<4, with: $0) }
            try wire.server.writePlaintext(header)
            wire.exchange()
            guard case .badFrame = try #require(wire.ends.first) else {
                Issue.record("ended as \(wire.ends), not a bad frame")
                return
            }
        }
    }

    @Test func whatTheSocketRefusesIsSentOnceItIsWritableAgain() throws {
        try withTemporaryDirectory { directory in
            let wire = try EmbeddedWire(fixture: try TLSFixture(directory: directory))
            try wire.handshake()
            wire.peer.sendWindow = 10
            wire.connection.send(Message.ping(nonce: 3).frame(requestID: 4))
            wire.loop.run()
            #expect(try wire.receivedByServer().isEmpty, "only 10 bytes of the record went")
            wire.peer.sendWindow = Int.max
            wire.exchange()
            #expect(try wire.receivedByServer().map(\.requestID) == [4])
            #expect(wire.ends.isEmpty)
        }
    }
}
