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

    // MARK: SubscriptionStart

    private func store(revisions: Int) async throws -> MemoryStore {
        let store = MemoryStore()
        for index in 0..<revisions { _ = try await store.create(content: "memo \(index)", id: nil, insertDate: nil) }
        return store
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
        let messages = try start.items.map { item in
            guard case .frame(let bytes) = item else { throw Failure("not a frame: \(item)") }
            var decoder = FrameDecoder()
            decoder.append(bytes)
            let frame = try #require(try decoder.next())
            #expect(frame.requestID == 9)
            return try Message(frame: frame)
        }
        #expect(messages.count == 3)
        #expect(messages.first == .subscribed(head: 3))
        #expect(messages.dropFirst().map { if case .change(let change) = $0 { Int(change.revision) } else { 0 } } == [2, 3])
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
