import Foundation
import MemoModel
import MemoProbe
import MemoServer
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// `--sends batched` (the default) against `--sends each`: a change's records for a thread's subscribers go to the
/// kernel in one io_uring submission, or one `send` each. Either way every subscriber that reads gets every change
/// whole and in order, and one that stops reading fills its socket, then its queue, and is dropped as a slow
/// consumer, while the others go on.
@Suite("Fan-out: a change's records for a thread's subscribers sent as one batch")
struct BatchedSendsTests {
    @Test(arguments: [true, false])
    func readersGetEveryChangeInOrderWhileAStoppedReaderIsDropped(batched: Bool) throws {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 256 * 1024
        limits.batchedSends = batched
        let log = Recorder<String>()
        let server = try TestServer(limits: limits, log: ServerLog { log.record($0) }, metrics: true, threads: 2)
        defer { server.stop() }
        let metrics = try #require(server.server.metricsAddress)
        // Twelve subscribers over the server's two threads (connections are dealt round-robin): six on each,
        // enough for a batch; the last one never reads.
        var subscribers: [(client: TestClient, subscription: UInt32)] = []
        for _ in 0..<12 {
            let client = try server.connect()
            let subscription = try client.send(Message.subscribe(after: 0))
            _ = try client.receive { $0.requestID == subscription && $0.type == Message.Kind.subscribed.rawValue }
            subscribers.append((client, subscription))
        }
        let readers = subscribers.dropLast()
        let sleeper = subscribers.last!
        let writer = try server.connect()

        // 8 KB a change: one TLS record each, so the readers' records go in the batch. The sleeper's socket fills
        // (the kernel refuses part of a record, which waits in its connection), then its queue, past which it is
        // dropped.
        var written: [[UInt8]] = []
        var dropped = false
        for index in 0..<2000 where !dropped {
            let content = "change \(index) " + String(repeating: "가", count: 2700)
            guard case .memo = try writer.request(Message.create(id: nil, insertMicros: nil, content: content)) else {
                Issue.record("create \(index) was not answered with its memo")
                return
            }
            written.append(Array(content.utf8))
            for reader in readers {
                let (_, message) = try reader.client.receive { $0.requestID == reader.subscription }
                guard case .change(let change) = message else {
                    Issue.record("a reader got \(message) instead of change \(index)")
                    return
                }
                #expect(Array(change.memo.content.utf8) == written[index], "change \(index) arrived altered")
                #expect(change.revision == UInt64(index + 1), "change \(index) out of order")
            }
            dropped = log.values.contains { $0.contains("slow consumer") }
        }
        #expect(dropped, "the subscriber that stopped reading was never dropped")
        let closing = try sleeper.client.readUntilClosed()
        #expect(closing.contains { if case .goingAway(.slowConsumer, _) = $0 { true } else { false } })
        // The readers go on after the drop.
        _ = try writer.request(.create(id: nil, insertMicros: nil, content: "after the drop"))
        for reader in readers {
            guard case .change(let change) = try reader.client.receive({ $0.requestID == reader.subscription }).1
            else {
                Issue.record("a reader got no change after the drop")
                return
            }
            #expect(Array(change.memo.content.utf8) == Array("after the drop".utf8))
        }
        // Which way the records went: counted by the server.
        let text = try httpRequest(metrics, "/metrics").body
        let batchedSends = try #require(sample(text, "memo_batched_sends_total"))
        let batches = try #require(sample(text, "memo_send_batches_total"))
        if batched {
            #expect(batchedSends >= Double(written.count * 6), "most records should have gone in batches")
            #expect(batches >= Double(written.count) && batches <= Double(2 * (written.count + 1)))
        } else {
            #expect(batchedSends == 0 && batches == 0)
        }
    }
}
