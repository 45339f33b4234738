import Foundation
import MemoNet
import MemoProbe
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import TLSTestSupport
import Testing

@testable import MemoServer

/// Checks that a well-behaved client on `server` is still served.
func expectStillServed(_ server: TestServer, _ good: TestClient, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let reply = try good.request(.ping(nonce: 42))
        #expect(reply == .pong(nonce: 42), sourceLocation: sourceLocation)
        guard case .memo = try good.request(.create(id: nil, insertMicros: nil, content: "still here")) else {
            Issue.record("the good client's write failed", sourceLocation: sourceLocation)
            return
        }
    } catch {
        Issue.record("the good client was affected: \(error)", sourceLocation: sourceLocation)
    }
}

/// Reads a raw TCP socket until the peer closes it, within a deadline. - Returns: whether it closed.
func waitForClose(_ socket: TCPSocket, within seconds: Int = 10) throws -> Bool {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        guard try socket.wait(for: .readable, timeout: deadline - ContinuousClock.now) else { return false }
        do {
            if try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) == .eof { return true }
        } catch {
            return true  // reset
        }
    }
    return false
}

@Suite("Server: hostile and broken peers get a clear error, only their connection closes")
struct ServerHostileTests {
    @Test func clientsWithoutACertificateOrFromAnotherCAAreRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let good = try server.connect()

        let noCertificate = TestClient.Identity(ca: server.certificates.path + "/ca.crt")
        #expect { try TestClient(address: server.address, identity: noCertificate).hello() } throws: { error in
            (error as? TLSError)?.kind == .noClientCertificate
        }

        let other = try TestCertificates()
        let foreign = TestClient.Identity(
            ca: server.certificates.path + "/ca.crt", certificate: other.path + "/client.crt",
            key: other.path + "/client.key")
        #expect { try TestClient(address: server.address, identity: foreign).hello() } throws: { error in
            (error as? TLSError)?.kind == .unknownCA
        }
        expectStillServed(server, good)
    }

    @Test func plainTCPAndSilentPeersAreClosed() throws {
        var limits = ServerLimits()
        limits.handshakeTimeout = 0.5
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let good = try server.connect()

        let plain = try TCPSocket.connect(to: server.address, timeout: .seconds(5))
        defer { plain.close() }
        let request = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        _ = try request.withUnsafeBytes { try plain.write($0) }
        #expect(try waitForClose(plain))

        let silent = try TCPSocket.connect(to: server.address, timeout: .seconds(5))
        defer { silent.close() }
        #expect(try waitForClose(silent))  // the handshake deadline closes it

        // TLS done but no hello: told so, then closed.
        let noHello = try server.connect(hello: false)
        let messages = try noHello.readUntilClosed()
        #expect(messages.contains { if case .error(.handshakeTimeout, _) = $0 { true } else { false } })
        expectStillServed(server, good)
    }

    @Test(arguments: [
        ("a length over the limit", [0xFF, 0xFF, 0xFF, 0xFF] as [UInt8], ErrorCode.frameTooLarge),
        ("a length of zero", [0, 0, 0, 0], .malformedFrame),
        ("an unknown message type", [0, 0, 0, 5, 0x33, 0, 0, 0, 9], .unknownMessageType),
        ("invalid UTF-8 content", [0, 0, 0, 12, 0x02, 0, 0, 0, 9, 0, 0, 0, 0, 2, 0xC3, 0x28], .invalidUTF8),
        ("trailing bytes", [0, 0, 0, 6, 0x04, 0, 0, 0, 9, 0xAA], .malformedFrame),
    ])
    func malformedInputGetsAnErrorAndClosesOnlyThatConnection(
        what: String, bytes: [UInt8], code: ErrorCode
    ) throws {
        let server = try TestServer()
        defer { server.stop() }
        let good = try server.connect()
        let bad = try server.connect()
        try bad.sendRaw(bytes)
        let messages = try bad.readUntilClosed()
        #expect(messages.contains { if case .error(code, _) = $0 { true } else { false } }, "\(what): \(messages)")
        expectStillServed(server, good)
    }

    @Test func aFrameCutMidwayThenSilenceIsClosedAfterTheFrameTimeout() throws {
        var limits = ServerLimits()
        limits.frameTimeout = 0.5
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let good = try server.connect()
        let stalled = try server.connect()
        let whole = Message.create(id: nil, insertMicros: nil, content: String(repeating: "x", count: 500))
            .frame(requestID: 3)
        try stalled.sendRaw(Array(whole.prefix(100)))
        let start = ContinuousClock.now
        let messages = try stalled.readUntilClosed()
        #expect(messages.contains { if case .error(.frameTimeout, _) = $0 { true } else { false } })
        #expect(ContinuousClock.now - start >= .milliseconds(400))
        expectStillServed(server, good)
    }

    /// The frame deadline is re-armed for each frame, not a limit on the connection: frames that keep arriving
    /// whole are never cut, even when every read ends mid-frame and the connection lives many deadlines. Driven on
    /// the embedded loop (real TLS and the real connection, no socket), whose clock moves only when the test moves
    /// it: every read finishes one ping and begins the next, 1.5 s after the read before it, against a 2 s
    /// deadline; the eight pings take six deadlines in all. Then the peer stops mid-frame, and is cut.
    @Test func framesThatKeepArrivingAreNeverCutByTheFrameTimeout() throws {
        try withTemporaryDirectory { directory in
            var limits = ServerLimits()
            limits.frameTimeout = 2
            let steady = try EmbeddedConnection(fixture: try TLSFixture(directory: directory), limits: limits)
            try steady.handshake()
            try steady.hello()
            let pings = (0..<9).map { Message.ping(nonce: UInt64($0)).frame(requestID: UInt32(10 + $0)) }
            try steady.send(Array(pings[0].prefix(6)))
            for i in 0..<8 {
                steady.loop.advanceTime(by: .milliseconds(1500))
                #expect(steady.connection.phase == .open, "cut before ping \(i) was finished")
                try steady.send(Array(pings[i].dropFirst(6)) + Array(pings[i + 1].prefix(6)))
                #expect(try steady.received() == [.pong(nonce: UInt64(i))])
            }
            steady.loop.advanceTime(by: .milliseconds(2100))
            steady.exchange()
            let messages = try steady.received()
            #expect(messages.contains { if case .error(.frameTimeout, _) = $0 { true } else { false } }, "\(messages)")
            #expect(steady.connection.phase == .lingering)
        }
    }

    @Test func requestsBeforeHelloAndUnknownVersionsAreRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let early = try server.connect(hello: false)
        try early.send(.list)
        #expect(try early.readUntilClosed().contains { if case .error(.helloRequired, _) = $0 { true } else { false } })
        let future = try server.connect(hello: false)
        try future.send(.hello(minVersion: WireProtocol.version + 1, maxVersion: 9, client: "from the future"))
        #expect(try future.readUntilClosed().contains {
            if case .error(.unsupportedVersion, _) = $0 { true } else { false }
        })
    }

    @Test func aRequestFloodOverTheInFlightLimitIsStopped() throws {
        var limits = ServerLimits()
        limits.maxInFlight = 8
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let good = try server.connect()
        let flooder = try server.connect()
        var burst: [UInt8] = []
        for i in 0..<200 {
            burst += Message.create(id: nil, insertMicros: nil, content: "flood \(i)").frame(requestID: UInt32(i + 10))
        }
        try flooder.sendRaw(burst)
        let messages = try flooder.readUntilClosed()
        #expect(messages.contains { if case .error(.tooManyInFlight, _) = $0 { true } else { false } })
        expectStillServed(server, good)
    }

    @Test func listsPipelinedWithoutReadingCountAgainstTheInFlightLimit() throws {
        var limits = ServerLimits()
        limits.maxInFlight = 8
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let good = try server.connect()
        for i in 0..<50 { _ = try good.request(.create(id: nil, insertMicros: nil, content: "memo \(i)")) }
        // Each queued answer holds a snapshot of every memo until it is sent: a peer must not pile them up.
        let flooder = try server.connect()
        try flooder.sendRaw((0..<200).flatMap { Message.list.frame(requestID: UInt32($0 + 10)) })
        let messages = try flooder.readUntilClosed()
        #expect(messages.contains { if case .error(.tooManyInFlight, _) = $0 { true } else { false } })
        // Lists read as they come are answered one after another without limit.
        for _ in 0..<20 {
            guard case .memos(_, true, let memos) = try good.request(.list) else {
                Issue.record("a list was not answered in one chunk")
                return
            }
            #expect(memos.count >= 50)
        }
        expectStillServed(server, good)
    }

    @Test func aSubscriberThatNeverReadsIsDroppedAsASlowConsumer() throws {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 256 * 1024
        let log = Recorder<String>()
        let server = try TestServer(limits: limits, log: ServerLog { log.record($0) })
        defer { server.stop() }
        let writer = try server.connect()
        let sleeper = try server.connect()
        try sleeper.send(.subscribe(after: nil))
        // Each change carries 48 KB; the kernel's socket buffers fill first, then the server's queue.
        let content = String(repeating: "z", count: 48 * 1024)
        var dropped = false
        for _ in 0..<2000 {
            _ = try writer.request(.create(id: nil, insertMicros: nil, content: content))
            if log.values.contains(where: { $0.hasPrefix("slow consumer") }) {
                dropped = true
                break
            }
        }
        #expect(dropped)
        let messages = try sleeper.readUntilClosed()
        #expect(messages.contains { if case .goingAway(.slowConsumer, _) = $0 { true } else { false } })
        expectStillServed(server, writer)
    }

    @Test func connectionsOverTheLimitAreToldSo() throws {
        var limits = ServerLimits()
        limits.maxConnections = 2
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let first = try server.connect()
        let second = try server.connect()
        let third = try server.connect(hello: false)
        #expect(try third.readUntilClosed().contains {
            if case .goingAway(.tooManyConnections, _) = $0 { true } else { false }
        })
        expectStillServed(server, first)
        expectStillServed(server, second)
    }

    /// A full server closes the oldest connection that has not said hello (a bare TCP connection, then one with TLS
    /// up and no hello) to make room for a new one, so peers that stall their handshakes cannot hold every place
    /// until the handshake deadline. Connections past hello are never closed for it; with none before hello left, a
    /// newcomer is told the server is full.
    @Test func aFullServerClosesTheOldestConnectionBeforeHelloToMakeRoom() throws {
        var limits = ServerLimits()
        limits.maxConnections = 3
        limits.evictableAfter = 0
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let first = try server.connect()
        let silent = try TCPSocket.connect(to: server.address, timeout: .seconds(5))
        #expect(pollUntil { server.server.connectionCount == 2 })
        let noHello = try server.connect(hello: false)
        #expect(server.server.connectionCount == 3)
        let tooMany: (Message) -> Bool = { if case .goingAway(.tooManyConnections, _) = $0 { true } else { false } }

        let second = try server.connect()
        #expect(try waitForClose(silent))
        expectStillServed(server, second)
        let third = try server.connect()
        #expect(try noHello.readUntilClosed().contains(where: tooMany))
        expectStillServed(server, third)

        let fourth = try server.connect(hello: false)
        #expect(try fourth.readUntilClosed().contains(where: tooMany))
        for client in [first, second, third] { expectStillServed(server, client) }
    }

    /// A connection before hello is closed for room only once it has waited `evictableAfter`: a newcomer does not
    /// take the place of a handshake that has just begun.
    @Test func aFullServerLeavesAYoungHandshakeToFinish() throws {
        var limits = ServerLimits()
        limits.maxConnections = 1
        limits.evictableAfter = 600
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let noHello = try server.connect(hello: false)
        let newcomer = try server.connect(hello: false)
        #expect(try newcomer.readUntilClosed().contains {
            if case .goingAway(.tooManyConnections, _) = $0 { true } else { false }
        })
        try noHello.hello()
        #expect(try noHello.request(.ping(nonce: 7)) == .pong(nonce: 7))
    }

    @Test func reusingTheIdOfAnOpenSubscriptionIsRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send(.subscribe(after: nil), id: 5)
        _ = try client.receive { $0.requestID == 5 }
        try client.send(.subscribe(after: nil), id: 5)
        #expect(try client.readUntilClosed().contains {
            if case .error(.duplicateRequestID, _) = $0 { true } else { false }
        })
    }
}
