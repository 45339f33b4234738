import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoServer
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// A peer that sends requests without reading the answers is slowed down (the server stops reading it) rather
/// than allowed to grow the server's memory or dropped; and every close says close_notify first.
@Suite("Server: backpressure on peers that do not read, close_notify before closing")
struct ServerBackpressureTests {
    static func limits() -> ServerLimits {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 256 * 1024
        return limits
    }

    /// One 20-byte get asks for 60 KB: 300 of them pipelined are 18 MB of answers, which the server produces only
    /// as the peer takes them (it takes no frame while what is queued is over its high-water mark).
    /// (Pings make answers no larger than the requests: the kernel's socket buffers hold megabytes of them, so a
    /// ping flood stays out of the server's queue either way; memo-torture's ping-flood case measures it.)
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func pipelinedGetsOfALargeMemoAreAnsweredAsFastAsThePeerReads(records: TLSRecordLayerChoice) throws {
        let server = try TestServer(limits: Self.limits(), records: records)
        defer { server.stop() }
        let connection = try server.connect()
        guard case .memo(let memo) = try connection.request(.create(
            id: nil, insertMicros: nil, content: String(repeating: "g", count: 60_000)))
        else {
            Issue.record("the create failed")
            return
        }
        let flood = Flood(connection)
        try flood.send((0..<300).flatMap { Message.get(id: memo.id).frame(requestID: UInt32($0 + 100)) },
                       requests: 300)
        let (answers, closed) = flood.drain(expecting: 300, within: .seconds(60)) {
            $0.type == Message.Kind.memo.rawValue
        }
        #expect(answers == 300)
        #expect(!closed)
    }

    /// The server ends every graceful close with close_notify (RFC 8446 §6.1), on both record layers: the peer
    /// then knows the stream ended whole. Before, the lingering close shut the socket without it.
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func theServerSendsCloseNotifyBeforeClosing(records: TLSRecordLayerChoice) throws {
        let server = try TestServer(records: records)
        defer { server.stop() }
        let leaving = try server.connect()
        try leaving.send(.goingAway(code: .shuttingDown, message: "bye"))
        _ = try leaving.readUntilClosed()
        #expect(leaving.tls.peerClosed, "closed without close_notify")

        let refused = try server.connect()
        try refused.sendRaw(HostileFrames.unknownType)
        let messages = try refused.readUntilClosed()
        #expect(messages.contains { if case .error(.unknownMessageType, _) = $0 { return true } else { return false } })
        #expect(refused.tls.peerClosed, "closed without close_notify")
    }
}

/// The server's log says which alert the record layer sent and why, not only "TLS failure".
@Suite("Server: TLS failures are logged with their alert")
struct ServerTLSLogTests {
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func aTamperedRecordIsLoggedWithItsAlertAndReason(records: TLSRecordLayerChoice) throws {
        let lines = LogLines()
        let log = ServerLog { line in lines.lines.withLock { $0.append(line) } }
        let server = try TestServer(log: log, records: records)
        defer { server.stop() }
        let connection = try server.connect()
        try connection.tls.writePlaintext(Message.ping(nonce: 1).frame(requestID: 5))
        var wire: [UInt8] = []
        connection.tls.takeOutbound(into: &wire)
        wire[wire.count - 1] ^= 0x80  // the last byte of the tag
        _ = try wire.withUnsafeBytes { try connection.socket.write($0) }
        let deadline = ContinuousClock.now + .seconds(10)
        var closeLine: String?
        while closeLine == nil, ContinuousClock.now < deadline {
            closeLine = lines.lines.withLock { $0.first { $0.hasPrefix("close conn=") } }
            if closeLine == nil { _ = try? connection.socket.wait(for: .readable, timeout: .milliseconds(20)) }
        }
        let line = try #require(closeLine)
        // Our layer names the alert as RFC 8446 does; OpenSSL's reason string says "bad record mac".
        #expect(line.contains("bad_record_mac") || line.contains("bad record mac"), "\(line)")
    }
}

enum HostileFrames {
    /// A frame of type 0x33, which the protocol does not define.
    static let unknownType: [UInt8] = [0, 0, 0, 5, 0x33, 0, 0, 0, 9]
}
