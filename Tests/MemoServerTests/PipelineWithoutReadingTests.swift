import Foundation
import MemoModel
import MemoProbe
import MemoServer
import MemoWire
import ServerTestSupport
import Testing

/// PROTOCOL.md, Conversation §2: a client that sends many requests before reading any answer is not dropped; the
/// server stops reading it while a quarter of `--max-outbound` is queued for it, so the client's own sends stall,
/// and goes on when it reads. (A subscriber that does not read while changes are pushed is dropped with 301:
/// `ServerHostileTests.aSubscriberThatNeverReadsIsDroppedAsASlowConsumer`.)
@Suite("Pipelining without reading: the server stops reading the client instead of dropping it")
struct PipelineWithoutReadingTests {
    /// Creates of 50 KB sent without reading, 40 MB in all against a 256 KiB outbound limit: the client's sends
    /// stall (the server stopped reading it: its answers and the kernel's buffers are full) well before all are
    /// sent, with no going-away (PROTOCOL.md said 301 before issue 24, item 10; with the server's pause taken out
    /// the sends never stall and the server drops the client with 301). Once the client reads, every create it sent
    /// is answered, in order, on the same connection.
    @Test func aClientThatWritesWithoutReadingIsStoppedNotDroppedAndServedOnceItReads() throws {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 256 * 1024
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let connection = try server.connect()
        let content = String(repeating: "p", count: 50_000)
        let flood = Flood(connection)
        let chunks = 800
        let stalled = try flood.sendUntilStalled(chunks: chunks, perChunk: 1, stallAfter: .seconds(3)) { index in
            Message.create(id: UUID(), insertMicros: nil, content: content).frame(requestID: UInt32(100 + index))
        } sample: {}
        #expect(stalled, "all \(chunks) creates (40 MB) went out without the client reading")
        let sent = flood.requests
        #expect(sent < chunks)
        #expect(server.store.revision < UInt64(sent), "the server took every create sent")

        var answered: [UInt32] = []
        var goingAway = false
        let (taken, closed) = flood.drain(expecting: sent, within: .seconds(120)) { frame in
            if frame.type == Message.Kind.goingAway.rawValue { goingAway = true }
            guard frame.type == Message.Kind.memo.rawValue else { return false }
            answered.append(frame.requestID)
            return true
        }
        #expect(!goingAway && !closed)
        #expect(taken == sent)
        #expect(answered == (0..<sent).map { UInt32(100 + $0) })
        #expect(server.store.revision == UInt64(sent))
        #expect(try connection.request(.ping(nonce: 5)) == .pong(nonce: 5))
    }
}
