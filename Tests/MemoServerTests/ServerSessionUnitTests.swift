import Foundation
import MemoModel
import MemoStore
import MemoWire
import Synchronization
import Testing

@testable import MemoServer

/// A session with what its connection gives it: the frame decoder (the transport's) and the phase (the
/// machine's), moved on as the connection moves them on the session's actions.
struct FramedSession {
    var session: ServerSession
    var frames = FrameDecoder()
    var awaitingHello = true
    /// The session asked to close; its connection reads nothing more.
    var closed = false

    mutating func receive(
        _ bytes: UnsafeRawBufferPointer, store: some ServingStore, outputBudget: Int = .max
    ) -> [SessionAction] {
        guard !closed else { return [] }
        frames.append(bytes)
        var counters = LoopCounters()
        let actions = session.receive(
            from: &frames, awaitingHello: awaitingHello, store: store, outputBudget: outputBudget,
            counters: &counters)
        for action in actions {
            if case .helloAccepted = action { awaitingHello = false }
            if case .close = action { closed = true }
        }
        return actions
    }

    var bufferedBytes: Int { frames.bufferedByteCount }
    var hasWholeFrame: Bool { frames.hasWholeFrame }
    var hasPendingWrites: Bool { session.hasPendingWrites }
    var framesReceived: Int { session.framesReceived }

    mutating func completed(
        requestID: UInt32, _ result: Result<WriteOutcome, MemoError>
    ) -> (answer: Message, log: LogLine?) {
        session.completed(requestID: requestID, result)
    }
}

/// `ServerSession` fed bytes directly: no socket, no TLS, the in-memory store.
@Suite struct ServerSessionUnitTests {
    private let store = MemoryStore(clock: { 1_700_000_000_000_000 })

    private func session() -> FramedSession {
        FramedSession(session: ServerSession(limits: ServerLimits(), role: .readWrite, serverName: "unit"))
    }

    private func hello(_ id: UInt32 = 1) -> [UInt8] {
        Message.hello(minVersion: 1, maxVersion: WireProtocol.version, client: "unit").frame(requestID: id)
    }

    /// The frames a list of actions sends, decoded.
    private func sent(_ actions: [SessionAction]) throws -> [Message] {
        var messages: [Message] = []
        for case .send(let bytes) in actions {
            var decoder = FrameDecoder()
            decoder.append(bytes)
            let frame = try #require(try decoder.next())
            messages.append(try Message(frame: frame, version: WireProtocol.version))
        }
        return messages
    }

    private func feed(_ session: inout FramedSession, _ bytes: [UInt8]) -> [SessionAction] {
        bytes.withUnsafeBytes { session.receive($0, store: store) }
    }

    /// The one page cap memo-client pages by (`WireProtocol.maxVersionsPage`) is the one the server cuts to.
    @Test func aHistoryOrTrashLimitAboveTheWiresVersionsPageIsCutToIt() throws {
        let id = UUID()
        let cap = Int(WireProtocol.maxVersionsPage)
        var framed = session()
        let actions = feed(&framed, hello(1)
            + Message.history(id: id, limit: 5000, before: nil).frame(requestID: 2, version: WireProtocol.version)
            + Message.trash(limit: .max, before: 9).frame(requestID: 3, version: WireProtocol.version)
            + Message.history(id: id, limit: UInt32(cap), before: 7).frame(requestID: 4, version: WireProtocol.version))
        let reads = actions.compactMap { action -> VersionRead? in
            guard case .readVersions(_, let read) = action else { return nil }
            return read
        }
        guard reads.count == 3,
            case .history(id, cap, nil) = reads[0],
            case .trash(cap, 9) = reads[1],
            case .history(id, cap, 7) = reads[2]
        else {
            Issue.record("not three reads cut to \(cap): \(reads)")
            return
        }
    }

    @Test func framesFedOneByteAtATimeAreAnsweredAsWholeOnes() throws {
        let id = UUID()
        let stream = hello(1) + Message.ping(nonce: 42).frame(requestID: 2)
            + Message.create(id: id, insertMicros: nil, content: "한글 memo").frame(requestID: 3)
        let pingEnd = hello(1).count + Message.ping(nonce: 42).frame(requestID: 2).count
        let frameEnds = [hello(1).count, pingEnd, stream.count]

        var whole = session()
        let wholeActions = feed(&whole, stream)

        var bytewise = session()
        var actions: [SessionAction] = []
        var sinceFrameEnd = 0
        for (index, byte) in stream.enumerated() {
            let step = feed(&bytewise, [byte])
            let isEnd = frameEnds.contains(index + 1)
            sinceFrameEnd = isEnd ? 0 : sinceFrameEnd + 1
            // Nothing happens until a frame's last byte; then exactly its answer. The partial frame is held.
            #expect(step.isEmpty == !isEnd, "after byte \(index + 1)")
            #expect(bytewise.bufferedBytes == sinceFrameEnd, "after byte \(index + 1)")
            actions += step
        }
        #expect(bytewise.bufferedBytes == 0)
        #expect(!bytewise.awaitingHello)
        #expect(bytewise.framesReceived == 3)
        #expect(try sent(actions) == sent(wholeActions))
        #expect(try sent(actions).count == 2)  // welcome and pong; the create went to the store
        guard case .submit(3, .create(let createdID, let content, _, _, _)) = try #require(actions.last) else {
            Issue.record("the create was not submitted: \(actions)")
            return
        }
        #expect(createdID == id)
        #expect(Array(content.utf8) == Array("한글 memo".utf8))
        #expect(bytewise.hasPendingWrites)
    }

    @Test func aPartialFrameIsBufferedAndNotAnswered() {
        var session = session()
        let frame = hello()
        #expect(feed(&session, Array(frame.dropLast())).isEmpty)
        #expect(session.bufferedBytes == frame.count - 1)
        #expect(session.awaitingHello)
        // The hello is accepted and answered.
        #expect(feed(&session, [frame.last!]).count == 2)
        #expect(session.bufferedBytes == 0)
        #expect(!session.awaitingHello)
    }

    @Test func aWriteAnsweredByTheStoreIsNoLongerPending() throws {
        var session = session()
        _ = feed(&session, hello())
        let actions = feed(&session, Message.create(id: UUID(), insertMicros: nil, content: "x").frame(requestID: 7))
        guard case .submit(7, let op) = try #require(actions.first) else {
            Issue.record("no submit: \(actions)")
            return
        }
        #expect(session.hasPendingWrites)
        // The memory store answers at once, on this thread.
        let answer = Mutex<Result<WriteOutcome, MemoError>?>(nil)
        store.submit([op]) { results in answer.withLock { $0 = results[0] } }
        let (message, line) = session.completed(requestID: 7, try #require(answer.withLock { $0 }))
        #expect(line == nil)
        #expect(!session.hasPendingWrites)
        guard case .memo(let memo) = message else {
            Issue.record("the answer is not a memo")
            return
        }
        #expect(memo.content == "x")
    }

    /// A write the store refuses is answered with the error and logged with its kind and memo id (the session keeps
    /// only those for a write in flight, not the whole operation).
    @Test func aRefusedWriteIsLoggedWithItsKindAndMemoID() throws {
        var session = session()
        _ = feed(&session, hello())
        let id = UUID()
        let actions = feed(&session, Message.update(id: id, expectedRevision: nil, content: "y").frame(
            requestID: 9, version: WireProtocol.version))
        guard case .submit(9, let op) = try #require(actions.first) else {
            Issue.record("no submit: \(actions)")
            return
        }
        let answer = Mutex<Result<WriteOutcome, MemoError>?>(nil)
        store.submit([op]) { results in answer.withLock { $0 = results[0] } }
        let (message, line) = session.completed(requestID: 9, try #require(answer.withLock { $0 }))
        let logged = try #require(line)
        #expect(logged.event == "refused")
        #expect(logged.detail.hasPrefix("request=9 update id=\(id.uuidString.lowercased()): 200 not-found"))
        #expect(!session.hasPendingWrites)
        guard case .error(let code, _) = message else {
            Issue.record("the answer is not an error")
            return
        }
        #expect(code == .notFound)
    }

    @Test func theOutputBudgetLeavesWholeFramesBuffered() {
        var session = session()
        _ = feed(&session, hello())
        let pings = (0..<3).flatMap { Message.ping(nonce: UInt64($0)).frame(requestID: 10 + UInt32($0)) }
        let first = pings.withUnsafeBytes { session.receive($0, store: store, outputBudget: 1) }
        #expect(first.count == 1)
        #expect(session.hasWholeFrame)
        let rest = session.receive(UnsafeRawBufferPointer(start: nil, count: 0), store: store)
        #expect(rest.count == 2)
        #expect(!session.hasWholeFrame)
    }

    /// Memos written to `store` by `author` (the memory store answers at once, on this thread).
    private func written(_ contents: [String], by author: Author) throws -> [Memo] {
        let answers = Mutex<[Result<WriteOutcome, MemoError>]>([])
        store.submit(contents.map { .create(id: UUID(), content: $0, insertMicros: nil, author: author) }) { results in
            answers.withLock { $0 = results }
        }
        return try answers.withLock { results in try results.map { try $0.get().memo } }
    }

    /// The bytes a connection of protocol `version` sends for these actions' answers: each queued as
    /// `ServerConnection` queues it (a found memo by `OutboundQueue.append(memo:requestID:)`, a frame as it is).
    private func queuedBytes(_ actions: [SessionAction], version: UInt16) -> [UInt8] {
        var queue = OutboundQueue()
        queue.version = version
        for action in actions {
            switch action {
            case .send(let bytes): queue.append(.frame(bytes))
            case .sendMemo(let requestID, let memo): queue.append(memo: memo, requestID: requestID)
            default: break
            }
        }
        var writer = WireWriter(capacity: 1 << 16)
        while !queue.isEmpty { queue.fill(&writer, upTo: 1 << 20) }
        return writer.bytes
    }

    /// A get's answer is encoded from the stored memo straight into the queue: the same bytes as the `memo`
    /// message's frame (what the session queued before), in every protocol version (the author from version 3),
    /// for a memo small enough for the queue's tail and one larger; a missing memo is still a not-found error.
    @Test func aGetIsAnsweredWithTheBytesOfItsMemoMessageInEveryVersion() throws {
        let memos = try written(
            ["한글 memo", String(repeating: "m\u{00e9}", count: OutboundQueue.smallFrame)],
            by: Author(name: "writer-\u{00e9}", serial: "0123456789abcdef"))
        let missing = UUID()
        for version in WireProtocol.minimumVersion...WireProtocol.version {
            var framed = session()
            let hello = Message.hello(minVersion: version, maxVersion: version, client: "unit").frame(requestID: 1)
            _ = feed(&framed, hello)
            let actions = feed(
                &framed,
                Message.get(id: memos[0].id).frame(requestID: 5, version: version)
                    + Message.get(id: memos[1].id).frame(requestID: 6, version: version)
                    + Message.get(id: missing).frame(requestID: 7, version: version))
            #expect(actions.count == 3)
            let notFound = MemoError.notFound(missing)
            let expected = Message.memo(memos[0]).frame(requestID: 5, version: version)
                + Message.memo(memos[1]).frame(requestID: 6, version: version)
                + Message.error(code: ErrorCode(notFound), message: notFound.description)
                    .frame(requestID: 7, version: version)
            #expect(queuedBytes(actions, version: version) == expected, "version \(version)")
        }
    }

    /// A get's answer counts against the output budget as its frame did: a peer that pipelines gets and reads
    /// nothing is answered only up to the budget.
    @Test func aGetsAnswerCountsAgainstTheOutputBudget() throws {
        let memo = try #require(try written(["budgeted"], by: .none).first)
        var session = session()
        _ = feed(&session, hello())
        let gets = (0..<3).flatMap { Message.get(id: memo.id).frame(requestID: 10 + UInt32($0)) }
        let first = gets.withUnsafeBytes { session.receive($0, store: store, outputBudget: 1) }
        #expect(first.count == 1)
        #expect(session.hasWholeFrame)
        let rest = session.receive(UnsafeRawBufferPointer(start: nil, count: 0), store: store)
        #expect(rest.count == 2)
        #expect(!session.hasWholeFrame)
    }

    @Test func aRequestBeforeHelloIsRefusedAndCloses() throws {
        var session = session()
        let actions = feed(&session, Message.ping(nonce: 1).frame(requestID: 1))
        guard case .close = try #require(actions.last) else {
            Issue.record("no close: \(actions)")
            return
        }
        #expect(session.closed)
        #expect(session.awaitingHello)
        #expect(feed(&session, hello()).isEmpty)
    }
}
