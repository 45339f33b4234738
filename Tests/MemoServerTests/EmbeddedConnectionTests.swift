import Foundation
import MemoModel
import MemoNet
import MemoStore
import MemoTLS
import MemoTestSupport
import MemoWire
import TLSTestSupport
import Testing

@testable import MemoServer

/// One `ServerConnection` on an embedded loop (`EventLoop.embedded`, `TCPSocket.embedded()`): real TLS with
/// certificates made for the test and the real connection, session and machine, but no socket and no thread;
/// bytes go in and come out by hand and the clock moves only when the test moves it.
final class EmbeddedConnection {
    let loop: EventLoop
    let peer: EmbeddedPeer
    let connection: ServerConnection
    let client: TLSEngine
    private var decoder = FrameDecoder()
    private var plaintext: [UInt8] = []

    /// - Parameter clientContext: the client's context (default: the fixture's, its records handed off).
    init(fixture: TLSFixture, limits: ServerLimits = ServerLimits(), store: MemoryStore = MemoryStore(),
         rejected: Bool = false, clientContext: TLSContext? = nil) throws {
        loop = try EventLoop.embedded()
        let trust = try TrustStore(directory: fixture.directory, settings: TLSConfiguration(role: .server))
        let server = ServerShared(store: store, limits: limits, serverName: "embedded", log: .silent, trust: trust)
        _ = server.connectionOpened()
        let (socket, peer) = TCPSocket.embedded()
        self.peer = peer
        let context = LoopBound(LoopContext(counter: SubscriberCount(), batchesSends: true), eventLoop: loop)
        connection = ServerConnection(
            number: 1, socket: socket, peer: try SocketAddress(parsing: "127.0.0.1:1"),
            tls: try TLSEngine(context: trust.context), server: server, context: context, rejected: rejected)
        client = try TLSEngine(context: clientContext ?? fixture.clientContext(), serverName: "localhost")
        connection.start()
    }

    deinit {
        // A connection still registered (lingering, say) hangs up and lets go of the loop.
        loop.stopEmbedded()
    }

    /// Moves bytes both ways until neither side has more: the client's records to the server's socket, the loop
    /// run, what the server wrote to the client.
    func exchange() {
        for _ in 0..<50 {
            var moved = false
            if client.hasOutbound {
                var bytes: [UInt8] = []
                client.takeOutbound(into: &bytes)
                peer.write(bytes)
                moved = true
            }
            loop.run()
            let written = peer.read()
            if !written.isEmpty {
                client.feed(written)
                moved = true
            }
            if !client.isHandshakeComplete { _ = try? client.handshake() }
            if !moved { return }
        }
    }

    func handshake() throws {
        _ = try client.handshake()
        exchange()
        #expect(client.isHandshakeComplete)
    }

    func send(_ bytes: [UInt8]) throws {
        try client.writePlaintext(bytes)
        exchange()
    }

    func hello() throws {
        try send(
            Message.hello(minVersion: 1, maxVersion: WireProtocol.version, client: "embedded").frame(requestID: 1))
        guard case .welcome = try #require(try received().first) else {
            Issue.record("hello was not welcomed")
            return
        }
    }

    /// Every message the server sent since the last call, decoded.
    func received() throws -> [Message] {
        try receivedFrames().map(\.message)
    }

    /// Every message the server sent since the last call, decoded, with the request id its frame carried.
    func receivedFrames() throws -> [(requestID: UInt32, message: Message)] {
        _ = try? client.readPlaintext(into: &plaintext)
        decoder.append(plaintext)
        plaintext.removeAll()
        var frames: [(UInt32, Message)] = []
        while let frame = try decoder.next() {
            frames.append((frame.requestID, try Message(frame: frame, version: WireProtocol.version)))
        }
        return frames
    }
}

@Suite struct EmbeddedConnectionTests {
    @Test func aPeersCloseNotifyIsAnsweredWithOursThenTheConnectionLingersUntilThePeerCloses() throws {
        try withTemporaryDirectory { directory in
            let embedded = try EmbeddedConnection(fixture: try TLSFixture(directory: directory))
            try embedded.handshake()
            try embedded.hello()
            #expect(embedded.connection.phase == .open)
            embedded.client.shutdown()
            embedded.exchange()
            #expect(embedded.connection.phase == .lingering)
            #expect(embedded.peer.socketShutWrite)
            _ = try embedded.received()
            #expect(embedded.client.peerClosed, "the server's close_notify")
            #expect(!embedded.peer.isClosed)
            embedded.peer.end()
            embedded.loop.run()
            #expect(embedded.connection.phase == .closed)
            #expect(embedded.peer.isClosed)
        }
    }

    @Test func theFrameDeadlineRestartsWithEachWholeFrameAndClosesAPeerStuckMidFrame() throws {
        try withTemporaryDirectory { directory in
            var limits = ServerLimits()
            limits.frameTimeout = 10
            let embedded = try EmbeddedConnection(fixture: try TLSFixture(directory: directory), limits: limits)
            try embedded.handshake()
            try embedded.hello()
            let ping = Message.ping(nonce: 7).frame(requestID: 2)
            try embedded.send(Array(ping.prefix(3)))
            embedded.loop.advanceTime(by: .seconds(8))
            #expect(embedded.connection.phase == .open)
            // The frame ends and the next begins: the clock restarts, so 8 s more is still within it.
            try embedded.send(Array(ping.dropFirst(3)) + Array(ping.prefix(3)))
            #expect(try embedded.received() == [.pong(nonce: 7)])
            embedded.loop.advanceTime(by: .seconds(8))
            #expect(embedded.connection.phase == .open)
            embedded.loop.advanceTime(by: .seconds(3))
            embedded.exchange()
            guard case .error(let code, _) = try #require(try embedded.received().first) else {
                Issue.record("no error frame")
                return
            }
            #expect(code == .frameTimeout)
            #expect(embedded.connection.phase == .lingering)
        }
    }

    @Test func aConnectionOverTheLimitIsToldSoAfterTLSAndGetsNoSession() throws {
        try withTemporaryDirectory { directory in
            var limits = ServerLimits()
            limits.maxConnections = 1
            let embedded = try EmbeddedConnection(
                fixture: try TLSFixture(directory: directory), limits: limits, rejected: true)
            try embedded.handshake()
            let messages = try embedded.received()
            #expect(messages == [.goingAway(
                code: .tooManyConnections, message: "the server is at its limit of 1 connections; try again later")])
            #expect(embedded.connection.phase == .lingering)
            #expect(embedded.connection.role == nil)
            // A request sent anyway is not answered.
            try embedded.send(Message.ping(nonce: 1).frame(requestID: 2))
            #expect(try embedded.received().isEmpty)
        }
    }

    @Test func aChangeTheSocketTookInPartIsFinishedWholeBeforeTheChangesQueuedBehindIt() throws {
        try withTemporaryDirectory { directory in
            let embedded = try EmbeddedConnection(fixture: try TLSFixture(directory: directory))
            try embedded.handshake()
            try embedded.hello()
            try embedded.send(Message.subscribe(after: 0).frame(requestID: 7))
            _ = try embedded.received()  // the subscription's start
            let frames = (1...3).map { revision in
                SharedFrame(change: Change(revision: revision, kind: .created, memo: Memo(
                    id: UUID(), content: "change \(revision)", insertMicros: 1, updateMicros: 1, revision: revision)))
            }
            // The socket takes 40 bytes of the first change's record (about 150): it is written at once, straight
            // from the shared frame, and the rest waits for the socket to be writable.
            embedded.peer.sendWindow = 40
            let context = embedded.connection.context.value
            context.deliver([frames[0]])
            #expect(embedded.peer.sendWindow == 0)
            #expect(embedded.connection.registeredInterest.contains(.writable))
            // These cannot be written before the first one's rest: they are queued behind it.
            context.deliver([frames[1]])
            context.deliver([frames[2]])
            #expect(embedded.connection.outboundBytes > 0)
            embedded.peer.sendWindow = Int.max
            embedded.exchange()
            let received = try embedded.receivedFrames()
            #expect(received.map(\.requestID) == [7, 7, 7])
            #expect(received.map { message -> String? in
                guard case .change(let change) = message.message else { return nil }
                return "\(change.revision) \(change.memo.content)"
            } == ["1 change 1", "2 change 2", "3 change 3"])
            #expect(embedded.connection.registeredInterest == .readable)
            #expect(embedded.connection.outboundBytes == 0)
            // With nothing waiting, the next change is written whole during the delivery, before the loop runs.
            context.deliver([SharedFrame(change: Change(revision: 4, kind: .created, memo: Memo(
                id: UUID(), content: "change 4", insertMicros: 1, updateMicros: 1, revision: 4)))])
            embedded.client.feed(embedded.peer.read())
            #expect(try embedded.receivedFrames().map(\.requestID) == [7])
        }
    }

    /// A watcher that missed more than `--max-outbound` of changes resumes: its catch-up is encoded as it reads, so
    /// the limit counts what its socket refused, not what was queued before the socket was offered any. (Queued
    /// whole, the catch-up dropped it as a slow consumer on every resume, and it never caught up.)
    @Test func aResumeThatMissedMoreThanTheOutboundLimitCatchesUpWithTheChangesAfterItInOrder() async throws {
        let store = MemoryStore()
        for index in 1...300 {
            _ = try await store.create(
                content: "\(index) " + String(repeating: "m", count: 1000), id: nil, insertDate: nil)
        }
        try withTemporaryDirectory { directory in
            var limits = ServerLimits()
            limits.maxOutboundBytes = 128 * 1024
            let embedded = try EmbeddedConnection(
                fixture: try TLSFixture(directory: directory), limits: limits, store: store)
            try embedded.handshake()
            try embedded.hello()
            // The peer's window is shut while it resumes from revision 0 (300 KB behind), and a new change comes.
            embedded.peer.sendWindow = 0
            try embedded.send(Message.subscribe(after: 0).frame(requestID: 7))
            #expect(embedded.connection.phase == .open)
            embedded.connection.context.value.deliver([SharedFrame(change: Change(revision: 301, kind: .created, memo: Memo(
                id: UUID(), content: "301", insertMicros: 1, updateMicros: 1, revision: 301)))])
            #expect(embedded.connection.phase == .open)
            #expect(embedded.connection.outboundBytes < limits.maxOutboundBytes)
            embedded.peer.sendWindow = Int.max
            embedded.exchange()
            let received = try embedded.receivedFrames()
            #expect(received.first?.message == .subscribed(head: 300))
            let revisions = received.dropFirst().map { frame -> UInt64 in
                guard frame.requestID == 7, case .change(let change) = frame.message,
                      change.memo.content.hasPrefix("\(change.revision)") else { return 0 }
                return change.revision
            }
            #expect(revisions == Array(1...301))
            #expect(embedded.connection.phase == .open)
            #expect(embedded.connection.outboundBytes == 0)
        }
    }

    /// The history lets go of changes a resumed subscription's catch-up has not sent yet (its peer reads too
    /// slowly): the peer gets the changes sent before the gap, none after it, and going-away 301, to resume (and be
    /// answered history-gone).
    @Test func aCatchUpTheHistoryOvertakesEndsInASlowConsumerDropWithNoChangeAfterTheGap() throws {
        let store = MemoryStore(historyCapacity: 100)
        func create(_ count: Int) {
            for _ in 0..<count {
                store.submit([.create(id: UUID(), content: String(repeating: "m", count: 4000), insertMicros: nil)]) {
                    _ in
                }
            }
        }
        create(100)
        try withTemporaryDirectory { directory in
            let embedded = try EmbeddedConnection(fixture: try TLSFixture(directory: directory), store: store)
            try embedded.handshake()
            try embedded.hello()
            // The window is shut: the catch-up's first round (64 KiB, 16 changes) is sealed and waits.
            embedded.peer.sendWindow = 0
            try embedded.send(Message.subscribe(after: 0).frame(requestID: 7))
            #expect(embedded.connection.phase == .open)
            // 60 more changes: the history (100) no longer holds revisions 1 to 60.
            create(60)
            embedded.peer.sendWindow = Int.max
            embedded.exchange()
            let received = try embedded.received()
            #expect(received.first == .subscribed(head: 100))
            let revisions = received.compactMap { message -> UInt64? in
                if case .change(let change) = message { change.revision } else { nil }
            }
            #expect(!revisions.isEmpty && revisions.count < 60)
            #expect(revisions == Array(1...UInt64(max(1, revisions.count))))
            #expect(received.last == .goingAway(
                code: .slowConsumer,
                message: "the changes this connection was catching up on were let go of before they were sent; "
                    + "reconnect and resume from your last revision"))
            #expect(embedded.connection.phase != .open)
        }
    }

    @Test func aPeerThatStopsReadingIsDroppedAsASlowConsumerAfterTheRecordsAlreadySealed() throws {
        try withTemporaryDirectory { directory in
            var limits = ServerLimits()
            limits.maxOutboundBytes = 16 * 1024
            let memos = (0..<200).map { index in
                Memo(id: UUID(), content: String(repeating: "m", count: 1000), insertMicros: 1, updateMicros: 1,
                     revision: UInt64(index + 1))
            }
            let embedded = try EmbeddedConnection(
                fixture: try TLSFixture(directory: directory), limits: limits, store: MemoryStore(memos: memos))
            try embedded.handshake()
            try embedded.hello()
            // The peer's window closes: the list's first 64 KiB are sealed and wait for the socket.
            embedded.peer.sendWindow = 0
            try embedded.send(Message.list.frame(requestID: 2))
            #expect(embedded.connection.phase == .open)
            try embedded.send(Message.ping(nonce: 1).frame(requestID: 3))
            #expect(embedded.connection.phase == .closing)
            // The window opens: the sealed records, then going-away 301; the rest of the list and the pong are gone.
            embedded.peer.sendWindow = Int.max
            embedded.exchange()
            let messages = try embedded.received()
            #expect(messages.last == .goingAway(
                code: .slowConsumer,
                message: "more than 16384 bytes waiting for this client; "
                    + "reconnect and resume from your last revision"))
            #expect(!messages.contains(.pong(nonce: 1)))
            #expect(embedded.connection.phase == .lingering)
        }
    }
}
