import Foundation
import MemoModel
import MemoWire
import Testing

@testable import MemoServer

/// `OutboundQueue` alone: what it counts, in what order it gives frames back, and how it empties.
@Suite struct OutboundQueueTests {
    private func frame(_ size: Int, _ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: size) }

    /// Everything the queue gives, in `limit`-sized fills.
    private func drain(_ queue: inout OutboundQueue, limit: Int = 64 * 1024) -> (bytes: [UInt8], lists: Int) {
        var bytes: [UInt8] = []
        var lists = 0
        var writer = WireWriter(capacity: limit)
        while !queue.isEmpty {
            writer.bytes.removeAll(keepingCapacity: true)
            lists += queue.fill(&writer, upTo: limit)
            #expect(!writer.bytes.isEmpty, "a fill of a non-empty queue gave nothing")
            bytes += writer.bytes
        }
        return (bytes, lists)
    }

    @Test func smallFramesShareOneTailAndCountTheirBytes() {
        var queue = OutboundQueue()
        #expect(queue.isEmpty)
        #expect(queue.heldBytes == 0)
        for index in 0..<100 { queue.append(.frame(frame(20, UInt8(index)))) }
        #expect(queue.queuedBytes == 2000)
        // Held: the tail's whole allocation, at least the bytes.
        #expect(queue.heldBytes >= 2000)
        let (bytes, _) = drain(&queue)
        #expect(bytes == (0..<100).flatMap { frame(20, UInt8($0)) })
        #expect(queue.queuedBytes == 0)
        #expect(queue.heldBytes == 0)
    }

    @Test func aLargeFrameCountsItsOverheadAndKeepsItsPlace() {
        var queue = OutboundQueue()
        let large = frame(OutboundQueue.smallFrame + 1, 9)
        queue.append(.frame(frame(10, 1)))
        queue.append(.frame(large))
        queue.append(.frame(frame(10, 2)))
        // The first small frame moved behind the items as a frame of its own, with its overheads.
        let overhead = OutboundQueue.arrayOverhead + OutboundQueue.itemOverhead
        #expect(queue.queuedBytes == 10 + overhead + large.count + overhead + 10)
        let (bytes, _) = drain(&queue)
        #expect(bytes == frame(10, 1) + large + frame(10, 2))
        #expect(queue.queuedBytes == 0)
    }

    @Test func fillsStopNearTheLimitAndTheNextContinues() {
        var queue = OutboundQueue()
        for index in 0..<10 { queue.append(.frame(frame(1000, UInt8(index)))) }
        var writer = WireWriter(capacity: 4096)
        queue.fill(&writer, upTo: 2500)
        #expect(writer.bytes.count == 2500)
        #expect(queue.queuedBytes == 7500)
        #expect(!queue.isEmpty)
        let (rest, _) = drain(&queue, limit: 2500)
        #expect(writer.bytes + rest == (0..<10).flatMap { frame(1000, UInt8($0)) })
    }

    @Test func aListStreamIsMadeChunkByChunkAndCountedWhenFinished() throws {
        let memos = (0..<50).map {
            Memo(id: UUID(), content: String(repeating: "m", count: 100), insertMicros: Int64($0),
                 updateMicros: Int64($0), revision: UInt64($0 + 1))
        }
        var queue = OutboundQueue()
        for (requestID, snapshot) in [(UInt32(5), false), (6, true)] {
            queue.append(.stream(ChunkStream(
                requestID: requestID, revision: 50, memos: memos, snapshot: snapshot, maxFrameSize: 1024)))
        }
        #expect(queue.queuedBytes == 2 * OutboundQueue.itemOverhead)
        let (bytes, lists) = drain(&queue, limit: 1)
        // Only `list` answers are counted (a snapshot is a subscription's, not a list in flight).
        #expect(lists == 1)
        #expect(queue.queuedBytes == 0)
        var decoder = FrameDecoder(maxFrameSize: 1024)
        decoder.append(bytes)
        var listed = 0
        var snapshotted = 0
        while let frame = try decoder.next() {
            switch try Message(frame: frame) {
            case .memos(_, _, let part): listed += part.count
            case .snapshot(_, _, let part): snapshotted += part.count
            default: Issue.record("unexpected frame \(frame.type)")
            }
        }
        #expect(listed == 50)
        #expect(snapshotted == 50)
    }

    @Test func aSharedChangeIsPatchedWithEachSubscribersRequestID() throws {
        let memo = Memo(id: UUID(), content: "c", insertMicros: 1, updateMicros: 1, revision: 3)
        let shared = SharedFrame(change: Change(revision: 3, kind: .created, memo: memo))
        var queue = OutboundQueue()
        queue.append(.change(shared, requestID: 77))
        #expect(queue.queuedBytes == shared.bytes.count + OutboundQueue.itemOverhead)
        let (bytes, _) = drain(&queue)
        var decoder = FrameDecoder()
        decoder.append(bytes)
        #expect(try #require(try decoder.next()).requestID == 77)
    }

    /// An answer encoded into the queue comes out as the same bytes as its frame, in its place among the frames
    /// queued before and after it, and counts its bytes; one too large for the tail becomes an item of its own.
    @Test func messagesEncodedIntoTheQueueKeepTheirPlaceAndBytes() throws {
        let memo = Memo(id: UUID(), content: "answer", insertMicros: 1, updateMicros: 2, revision: 3)
        let small = Message.memo(memo)
        let large = Message.memo(Memo(id: UUID(), content: String(repeating: "L", count: OutboundQueue.smallFrame),
                                      insertMicros: 1, updateMicros: 1, revision: 4))
        var queue = OutboundQueue()
        queue.append(.frame(frame(10, 1)))
        queue.append(small, requestID: 7)
        #expect(queue.queuedBytes == 10 + small.frame(requestID: 7).count)
        queue.append(large, requestID: 8)
        queue.append(small, requestID: 9)
        queue.append(.frame(frame(OutboundQueue.smallFrame + 1, 2)))
        let overhead = OutboundQueue.arrayOverhead + OutboundQueue.itemOverhead
        let expected = frame(10, 1) + small.frame(requestID: 7) + large.frame(requestID: 8)
            + small.frame(requestID: 9) + frame(OutboundQueue.smallFrame + 1, 2)
        // The tail before the large answer and the one before the large frame each moved behind it as an item.
        #expect(queue.queuedBytes == expected.count + 4 * overhead)
        let (bytes, _) = drain(&queue, limit: 1000)
        #expect(bytes == expected)
        #expect(queue.queuedBytes == 0)
        #expect(queue.heldBytes == 0)
    }

    @Test func removeAllEmptiesEverything() {
        var queue = OutboundQueue()
        queue.append(.frame(frame(10, 1)))
        queue.append(.frame(frame(OutboundQueue.smallFrame * 2, 2)))
        queue.append(.frame(frame(10, 3)))
        queue.removeAll()
        #expect(queue.isEmpty)
        #expect(queue.queuedBytes == 0)
        #expect(queue.heldBytes == 0)
    }

    /// A closing notice drops what is queued only when it says so (a slow consumer), and is queued only while
    /// output is accepted (not once lingering).
    @Test func aClosingNoticeDropsTheQueueOnlyWhenToldAndIsQueuedOnlyWhileOutputIsAccepted() {
        var notice = ServerConnectionMachine.Notice(
            code: .shuttingDown, message: "bye", reason: "server shutting down", goingAway: true)
        var queue = OutboundQueue()
        queue.append(.frame(frame(10, 1)))
        queue.append(notice, acceptsOutput: true)
        #expect(drain(&queue).bytes == frame(10, 1) + notice.frame)
        queue.append(.frame(frame(10, 2)))
        notice.dropQueued = true
        queue.append(notice, acceptsOutput: true)
        #expect(drain(&queue).bytes == notice.frame)
        queue.append(.frame(frame(10, 3)))
        queue.append(notice, acceptsOutput: false)
        #expect(queue.isEmpty)
    }

    /// A successful write's answer, encoded straight from its memo, is the frame `.memo(memo)` encodes, in every
    /// protocol version, small (into the tail) and large (a frame of its own), and keeps its place behind
    /// what was queued before it.
    @Test func aMemoAnswerIsTheFrameOfItsMemoMessage() {
        let author = Author(name: "writer-\u{00e9}", serial: "0123456789abcdef0123456789abcdef")
        for version in [WireProtocol.minimumVersion, WireProtocol.authorsVersion] {
            for size in [0, 64, OutboundQueue.smallFrame + 1] {
                let memo = Memo(
                    id: UUID(), content: String(repeating: "m\u{00e9}", count: size / 3 + size % 2),
                    insertMicros: 1_700_000_000_000_000, updateMicros: 1_700_000_000_000_001, revision: 7,
                    author: author)
                var direct = OutboundQueue()
                direct.version = version
                var message = OutboundQueue()
                message.version = version
                direct.append(.frame(frame(10, 1)))
                direct.append(memo: memo, requestID: 42)
                message.append(.frame(frame(10, 1)))
                message.append(.memo(memo), requestID: 42)
                #expect(direct.queuedBytes == message.queuedBytes)
                let expected = frame(10, 1) + Message.memo(memo).frame(requestID: 42, version: version)
                #expect(drain(&direct).bytes == expected, "version \(version), \(memo.content.utf8.count) bytes")
                #expect(drain(&message).bytes == expected)
            }
        }
    }
}
