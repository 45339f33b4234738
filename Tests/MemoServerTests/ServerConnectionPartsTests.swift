import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoStore
import MemoWire
import Synchronization
import Testing

@testable import MemoServer

/// The values `ServerConnection` takes its decisions from, each alone: no socket, no TLS, no connection.
@Suite struct ServerConnectionPartsTests {
    // MARK: SessionEffects

    private func steps(
        _ actions: [SessionAction], maxFrameSize: Int = 1 << 20, version: UInt16 = WireProtocol.version
    ) -> [SessionEffects.Step] {
        var effects = SessionEffects(actions, maxFrameSize: maxFrameSize, version: version)
        var steps: [SessionEffects.Step] = []
        while let step = effects.next() { steps.append(step) }
        return steps
    }

    @Test func consecutiveWritesGoToTheStoreAsOneBatchInTheOrderTheyCame() throws {
        let first = WriteOp.create(id: UUID(), content: "a", insertMicros: nil)
        let second = WriteOp.delete(id: UUID(), expectedRevision: nil)
        let third = WriteOp.create(id: UUID(), content: "c", insertMicros: nil)
        let walked = steps([
            .submit(requestID: 1, op: first), .submit(requestID: 2, op: second), .send([9]),
            .submit(requestID: 3, op: third),
        ])
        #expect(walked.count == 3)
        guard case .submit(let ids, let ops) = walked[0] else { throw Failure("first step: \(walked[0])") }
        #expect(ids == [1, 2])
        #expect(ops == [first, second])
        guard case .queue(.frame(let bytes)) = walked[1] else { throw Failure("second step: \(walked[1])") }
        #expect(bytes == [9])
        guard case .submit(let lastIDs, let lastOps) = walked[2] else { throw Failure("third step: \(walked[2])") }
        #expect(lastIDs == [3])
        #expect(lastOps == [third])
    }

    @Test func aMemoAnswerIsQueuedAsItsMemoForItsRequestInOrder() throws {
        let memo = Memo(id: UUID(), content: "m", insertMicros: 1, updateMicros: 1, revision: 4)
        let walked = steps([.send([1]), .sendMemo(requestID: 5, memo), .send([2])])
        #expect(walked.count == 3)
        guard case .queue(.frame(let before)) = walked[0], case .queueMemo(let requestID, let queued) = walked[1],
            case .queue(.frame(let after)) = walked[2]
        else {
            throw Failure("not a frame, a memo and a frame: \(walked)")
        }
        #expect(before == [1] && after == [2])
        #expect(requestID == 5)
        #expect(queued == memo)
    }

    @Test func aListAndAPageAreQueuedAsStreamsOfChunksForTheirRequest() throws {
        let memo = Memo(id: UUID(), content: "m", insertMicros: 1, updateMicros: 1, revision: 4)
        let page = ListPage(revision: 7, memos: [memo], more: true)
        let walked = steps([
            .sendList(requestID: 5, revision: 4, memos: [memo]), .sendPage(requestID: 6, page), .close(reason: "bye"),
        ], maxFrameSize: 4096)
        #expect(walked.count == 3)
        guard case .queue(.stream(let list)) = walked[0], case .queue(.stream(let paged)) = walked[1] else {
            throw Failure("not two streams: \(walked)")
        }
        #expect(list.requestID == 5 && list.revision == 4 && list.pageMore == nil && !list.snapshot)
        #expect(list.maxFrameSize == 4096)
        #expect(paged.requestID == 6 && paged.revision == 7 && paged.pageMore == true)
        guard case .close(let reason) = walked[2] else { throw Failure("not a close: \(walked[2])") }
        #expect(reason == "bye")
    }

    @Test func answersAfterHelloAreEncodedAsTheVersionTheSessionAgreed() throws {
        let memo = Memo(
            id: UUID(), content: "m", insertMicros: 1, updateMicros: 1, revision: 4,
            author: Author(name: "alice", serial: "0A"))
        let page = ListPage(revision: 7, memos: [memo], more: false)
        for version in [UInt16(2), WireProtocol.authorsVersion] {
            let walked = steps(
                [.helloAccepted, .sendList(requestID: 5, revision: 4, memos: [memo]), .sendPage(requestID: 6, page)],
                version: version)
            guard walked.count == 3, case .helloAccepted(let agreed) = walked[0],
                case .queue(.stream(let list)) = walked[1], case .queue(.stream(let paged)) = walked[2]
            else {
                throw Failure("not hello then two streams: \(walked)")
            }
            #expect(agreed == version)
            #expect(list.version == version && paged.version == version)
            // The chunk as the client of that version decodes it: the author only from version 3.
            var stream = list
            var writer = WireWriter(capacity: 256)
            stream.produce(into: &writer)
            var decoder = FrameDecoder()
            decoder.append(writer.bytes)
            let decoded = try Message(frame: try #require(try decoder.next()), version: version)
            guard case .memos(_, _, let memos) = decoded else { throw Failure("not memos: \(decoded)") }
            #expect(memos.map(\.author) == [version >= WireProtocol.authorsVersion ? memo.author : .none])
        }
    }

    @Test func statusAndVersionReadsAreAnsweredFromReadsOffTheLoop() throws {
        let id = UUID()
        let walked = steps([
            .status(requestID: 1), .readVersions(requestID: 2, .history(id: id, limit: 5, before: 9)),
            .readVersions(requestID: 3, .trash(limit: 7, before: nil)),
        ])
        guard walked.count == 3,
            case .readOffLoop(1, .status) = walked[0],
            case .readOffLoop(2, .versions(.history(id, 5, 9))) = walked[1],
            case .readOffLoop(3, .versions(.trash(7, nil))) = walked[2]
        else {
            throw Failure("not three reads off the loop: \(walked)")
        }
    }

    @Test func aVersionsAnswerTooLargeForAFrameLosesItsOldestEntriesAndSaysMoreFollow() throws {
        let id = UUID()
        let versions = (1...40).reversed().map { revision in
            MemoVersion(
                id: id, revision: UInt64(revision), kind: .update, micros: Int64(revision),
                author: Author(name: "alice", serial: "0A"), content: String(repeating: "x", count: 100))
        }
        let fitted = OffLoopRead.fitted(.versions(id: id, more: false, versions: versions), maxFrameSize: 2048)
        #expect(fitted.frame(requestID: 0, version: WireProtocol.authorsVersion).count <= 2048)
        guard case .versions(_, let more, let kept) = fitted else { throw Failure("not versions: \(fitted)") }
        #expect(more)
        #expect(!kept.isEmpty && kept.map(\.revision) == versions.prefix(kept.count).map(\.revision))
        let small = Message.versions(id: id, more: false, versions: Array(versions.prefix(2)))
        #expect(OffLoopRead.fitted(small, maxFrameSize: 2048) == small)
    }

    // MARK: Unestablished

    @Test func connectionsBeforeHelloGiveTheOldestOnceOldEnoughAndTheQueueHoldsAboutThoseWaiting() {
        var queue = Unestablished<String>()
        // Steady traffic: each says hello soon after it is accepted; nothing accumulates.
        for number in 1...10_000 {
            queue.add(UInt64(number), "c\(number)", startedAt: UInt64(number))
            #expect(queue.remove(UInt64(number)) == "c\(number)")
        }
        #expect(queue.count == 0 && queue.queued == 0)
        // One stalls: those behind it stay queued until it goes, then leave with it.
        for number in 10_001...10_100 { queue.add(UInt64(number), "c\(number)", startedAt: UInt64(number)) }
        for number in 10_002...10_100 { _ = queue.remove(UInt64(number)) }
        #expect(queue.count == 1 && queue.queued == 100)
        #expect(queue.takeOldest(startedBy: 10_000) == nil)  // not old enough
        #expect(queue.takeOldest(startedBy: 10_001) == "c10001")
        #expect(queue.count == 0 && queue.queued == 0)
        #expect(queue.takeOldest(startedBy: .max) == nil)
        // The oldest still waiting is taken first; one taken or gone is not given again.
        for number in 10_101...10_103 { queue.add(UInt64(number), "c\(number)", startedAt: 0) }
        _ = queue.remove(10_101)
        #expect(queue.takeOldest(startedBy: .max) == "c10102")
        #expect(queue.remove(10_102) == nil)
        #expect(queue.takeOldest(startedBy: .max) == "c10103")
        #expect(queue.queued == 0)
    }

    // MARK: SubscriptionStart

    private func store(revisions: Int) async throws -> MemoryStore {
        let store = MemoryStore()
        for index in 0..<revisions { _ = try await store.create(content: "memo \(index)", id: nil, insertDate: nil) }
        return store
    }

    /// The frames `items` make once queued and written, as a connection's flush writes them.
    private static func frames(of items: [OutboundQueue.Item], version: UInt16) throws -> [Frame] {
        var queue = OutboundQueue()
        queue.version = version
        for item in items { queue.append(item) }
        var writer = WireWriter(capacity: 0)
        queue.fill(&writer, upTo: .max)
        #expect(queue.isEmpty && queue.heldBytes == 0)
        var decoder = FrameDecoder()
        decoder.append(writer.bytes)
        var frames: [Frame] = []
        while let frame = try decoder.next() { frames.append(frame) }
        return frames
    }

    @Test func aLongCatchUpIsEncodedAsThePeerReadsItNotQueuedWhole() async throws {
        let store = MemoryStore()
        for _ in 0..<100 { _ = try await store.create(content: String(repeating: "m", count: 1000), id: nil, insertDate: nil) }
        let start = SubscriptionStart(.after(0), requestID: 9, store: store, maxFrameSize: 4096, version: 3)
        var queue = OutboundQueue()
        queue.version = 3
        for item in start.items { queue.append(item) }
        // 100 KB of changes, and the queue holds the subscribed frame and one stream's slot.
        #expect(queue.heldBytes < 1024)
        var writer = WireWriter(capacity: 0)
        queue.fill(&writer, upTo: 16 * 1024)
        // One round's worth: at least the limit, at most one change over it.
        #expect(writer.bytes.count >= 16 * 1024 && writer.bytes.count < 18 * 1024)
        #expect(!queue.isEmpty)
        queue.fill(&writer, upTo: .max)
        #expect(queue.isEmpty && queue.heldBytes == 0)
        var decoder = FrameDecoder()
        decoder.append(writer.bytes)
        var revisions: [UInt64] = []
        while let frame = try decoder.next() {
            if case .change(let change) = try Message(frame: frame, version: 3) { revisions.append(change.revision) }
        }
        #expect(revisions == Array(1...100))
    }

    @Test func aSubscriptionFromTheStartStreamsTheSnapshotAndDeliversAfterItsRevision() async throws {
        let start = SubscriptionStart(
            .snapshot, requestID: 9, store: try await store(revisions: 3), maxFrameSize: 4096, version: 2)
        #expect(start.head == 3)
        guard start.items.count == 1, case .stream(let stream) = start.items[0] else {
            throw Failure("not one stream: \(start.items)")
        }
        #expect(stream.snapshot && stream.requestID == 9 && stream.revision == 3 && stream.memos.count == 3)
    }

    @Test func aSubscriptionFromARevisionSendsSubscribedThenEachChangeAfterIt() async throws {
        let start = SubscriptionStart(
            .after(1), requestID: 9, store: try await store(revisions: 3), maxFrameSize: 4096, version: 2)
        #expect(start.head == 3)
        // The changes are one stream, encoded as the queue is written.
        #expect(start.items.count == 2)
        let messages = try Self.frames(of: start.items, version: 2).map { frame in
            #expect(frame.requestID == 9)
            return try Message(frame: frame)
        }
        #expect(messages.count == 3)
        #expect(messages.first == .subscribed(head: 3))
        #expect(messages.dropFirst().map { if case .change(let change) = $0 { Int(change.revision) } else { 0 } } == [2, 3])
    }

    @Test func aSubscriptionsSnapshotAndChangesAreEncodedAsTheConnectionsVersion() async throws {
        let store = try await store(revisions: 3)
        let snapshot = SubscriptionStart(.snapshot, requestID: 9, store: store, maxFrameSize: 4096, version: 3)
        guard case .stream(let stream) = snapshot.items.first else { throw Failure("no stream: \(snapshot.items)") }
        #expect(stream.version == 3)
        let resumed = SubscriptionStart(.after(1), requestID: 9, store: store, maxFrameSize: 4096, version: 3)
        let revisions = try Self.frames(of: resumed.items, version: 3).dropFirst().map { frame -> UInt64 in
            // A version 2 frame has no author fields: decoded as version 3 it is short.
            let message = try Message(frame: frame, version: 3)
            guard case .change(let change) = message else { throw Failure("not a change: \(message)") }
            return change.revision
        }
        #expect(revisions == [2, 3])
    }

    @Test func aSubscriptionFromARevisionNoLongerKeptIsRefusedWithHistoryGone() async throws {
        let start = SubscriptionStart(
            .after(1), requestID: 9, store: MemoryStore(memos: [
                Memo(id: UUID(), content: "old", insertMicros: 1, updateMicros: 1, revision: 5),
            ]), maxFrameSize: 4096, version: 2)
        #expect(start.head == nil)
        guard start.items.count == 1, case .frame(let bytes) = start.items[0] else {
            throw Failure("not one frame: \(start.items)")
        }
        var decoder = FrameDecoder()
        decoder.append(bytes)
        #expect(try Message(frame: try #require(try decoder.next())) == .historyGone(requested: 1, oldestAvailable: 5))
    }

    // MARK: ConnectionLogName

    @Test func aConnectionsLinesNameItTheSameWayInTextAndFields() throws {
        var name = ConnectionLogName(number: 7, peer: try SocketAddress(parsing: "127.0.0.1:4000"))
        let opened = name.record(.opened(readOnly: true, tls: "TLSv1.3"))
        #expect(opened.text == "open conn=7 peer=127.0.0.1:4000 cn=- role=read-only tls=TLSv1.3")
        #expect(opened.event == "open")
        #expect(opened.fields.map { "\($0.0)=\($0.1)" }
            == ["conn=7", "peer=127.0.0.1:4000", "cn=-", "role=read-only", "tls=TLSv1.3"])
        name.commonName = "alice"
        let closed = name.record(.closed(reason: "peer closed the connection"))
        #expect(closed.text == "close conn=7 peer=127.0.0.1:4000 cn=alice reason=\"peer closed the connection\"")
        #expect(closed.fields.map(\.1) == ["7", "127.0.0.1:4000", "alice", "peer closed the connection"])
        let slow = name.slowConsumer(limit: 1024)
        #expect(slow.level == .warn)
        #expect(slow.text == "slow consumer conn=7 peer=127.0.0.1:4000 cn=alice: over 1024 bytes queued; dropping "
            + "them and sending going-away")
        #expect(slow.fields.last.map { "\($0.0)=\($0.1)" } == "queued_limit=1024")
        let overtaken = name.catchUpOvertaken()
        #expect(overtaken.level == .warn && overtaken.event == "slow_consumer")
        #expect(overtaken.text == "slow consumer conn=7 peer=127.0.0.1:4000 cn=alice: the history let go of changes "
            + "its catch-up had not sent; dropping what is queued and sending going-away")
        #expect(overtaken.fields.last.map { "\($0.0)=\($0.1)" } == "catch_up=overtaken")
        #expect(name.record(.opened(readOnly: false, tls: nil)).text.hasSuffix(" role=read-write tls=?"))
    }

    // MARK: ConnectionTimers

    @Test func startingADeadlineReplacesTheOneInItsSlotAndLeavesTheFrameDeadlineRunning() throws {
        let loop = try EventLoop.embedded()
        defer { loop.stopEmbedded() }
        let fired = Mutex<[String]>([])
        func timer(_ name: String, _ seconds: Int) -> TimerHandle {
            loop.schedule(after: .seconds(seconds)) { fired.withLock { $0.append(name) } }
        }
        var timers = ConnectionTimers()
        timers.replace(.handshake, with: timer("handshake", 10))
        timers.replace(.frame, with: timer("frame", 10))
        timers.replace(.closing, with: timer("closing", 5))
        #expect(timers.isRunning(.linger) && timers.isRunning(.frame))
        loop.advanceTime(by: .seconds(20))
        #expect(fired.withLock { $0 }.sorted() == ["closing", "frame"])
        timers.replace(.linger, with: timer("linger", 2))
        timers.replace(.frame, with: timer("frame again", 2))
        timers.cancelAll()
        #expect(!timers.isRunning(.handshake) && !timers.isRunning(.frame))
        loop.advanceTime(by: .seconds(20))
        #expect(fired.withLock { $0 }.sorted() == ["closing", "frame"])
    }

    // MARK: The machine's deadlines, budgets and notices

    @Test func eachDeadlineRunsItsTimeAndPassingItIsThatDeadlinesEvent() {
        var limits = ServerLimits()
        limits.handshakeTimeout = 3
        limits.frameTimeout = 4
        var machine = ServerConnectionMachine(limits: limits)
        #expect([.handshake, .frame, .closing, .linger].map { machine.duration(of: $0) } == [3, 4, 5, 2])
        #expect(machine.deadlinePassed(.frame, tlsComplete: true, bufferedBytes: 0) == .none)
        #expect(machine.deadlinePassed(.linger, tlsComplete: true, bufferedBytes: 9) == .none)
        #expect(machine.deadlinePassed(.closing, tlsComplete: true, bufferedBytes: 9) == .none)
        #expect(machine.deadlinePassed(.handshake, tlsComplete: false, bufferedBytes: 9) == .close)
        #expect(machine.closeReason == "handshake not finished within 3.0 s")
    }

    @Test func aRevokedCertificateIsToldWhenTheSessionIsUpAndClosedAtOnceBefore() throws {
        var ready = ServerConnectionMachine()
        _ = ready.helloAnswered()
        let action = ready.certificateRevoked(serial: "0A1B", sessionReady: true)
        guard case .sendAndClose(let notice) = action else { throw Failure("not told: \(action)") }
        #expect(notice.reason == "certificate revoked (serial 0A1B)")
        var decoder = FrameDecoder()
        decoder.append(notice.frame)
        let frame = try #require(try decoder.next())
        #expect(frame.requestID == 0)
        #expect(try Message(frame: frame) == .goingAway(
            code: .certificateRevoked, message: "your certificate (serial 0A1B) has been revoked"))
        var early = ServerConnectionMachine()
        #expect(early.certificateRevoked(serial: "0A1B", sessionReady: false) == .close)
    }

    @Test func readingAndAnsweringAreBoundedByTheOutboundLimit() {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 8 << 20
        let machine = ServerConnectionMachine(limits: limits)
        #expect(machine.highWater == 2 << 20)
        #expect(machine.readBudget == 256 * 1024)
        #expect(machine.answerBudget(holding: (2 << 20) - 100, progress: false) == 100)
        #expect(machine.answerBudget(holding: 3 << 20, progress: false) == 0)
        #expect(machine.answerBudget(holding: 3 << 20, progress: true) == 1)
        limits.maxOutboundBytes = 64 * 1024
        #expect(ServerConnectionMachine(limits: limits).readBudget == 16 * 1024)
    }
}

/// A test's own failure, with what was found instead.
private struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
