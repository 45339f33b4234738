import Foundation
import MemoModel
import MemoProbe
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// Whether `message` is an error frame with `code`.
func isError(_ message: Message, _ code: ErrorCode) -> Bool {
    if case .error(code, _) = message { return true }
    return false
}

/// The rules PROTOCOL.md states for the cases a second implementer asked about, each pinned here.
@Suite("PROTOCOL.md's rules: error 203, request ids, hello, permissions, idempotency and history, as specified")
struct ProtocolRulesTests {
    @Test func aServerToClientTypeFromAClientIsError203AndTheConnectionStaysOpen() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        let memo = Memo(id: UUID(), content: "x", insertMicros: 1, updateMicros: 1, revision: 1)
        let responses: [Message] = [
            .welcome(version: 1, revision: 0, maxFrameSize: 1 << 20, role: .readWrite, server: "s"), .memo(memo),
            .memos(revision: 0, last: true, memos: []), .ok, .snapshot(revision: 0, last: true, memos: []),
            .subscribed(head: 0), .change(Change(revision: 1, kind: .created, memo: memo)),
            .historyGone(requested: 1, oldestAvailable: 0),
        ]
        for response in responses {
            let reply = try client.request(response)
            #expect(isError(reply, .invalidRequest), "\(response.kind): \(reply)")
        }
        #expect(try client.request(.ping(nonce: 3)) == .pong(nonce: 3))
    }

    @Test func aClientsPongGetsNoAnswerAndItsErrorIsLoggedNotAnswered() throws {
        let log = Recorder<String>()
        let server = try TestServer(log: ServerLog { log.record($0) })
        defer { server.stop() }
        let client = try server.connect()
        try client.send(.pong(nonce: 1), id: 50)
        try client.send(.error(code: .malformedFrame, message: "could not read your memo"), id: 51)
        try client.send(.ping(nonce: 2), id: 52)
        // Answers keep the order of the requests: the first frame back answers the ping.
        let (frame, message) = try client.receive()
        #expect(frame.requestID == 52 && message == .pong(nonce: 2))
        #expect(log.values.contains {
            $0.hasPrefix("client error conn=") && $0.contains("cn=client")
                && $0.contains("request=51 100 malformed-frame: could not read your memo")
        }, "\(log.values)")
    }

    @Test func aSecondHelloIs203AndTheConnectionStaysOpen() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        #expect(isError(try client.request(.hello(minVersion: 1, maxVersion: 1, client: "again")), .invalidRequest))
        #expect(try client.request(.ping(nonce: 4)) == .pong(nonce: 4))
    }

    @Test func anUnknownTypeBeforeHelloIs102WithItsRequestIDNot105() throws {
        let server = try TestServer()
        defer { server.stop() }
        let early = try server.connect(hello: false)
        try early.sendRaw([0, 0, 0, 5, 0x33, 0, 0, 0, 9])
        let (frame, message) = try early.receive()
        #expect(frame.requestID == 9 && isError(message, .unknownMessageType), "\(message)")
        #expect(try early.readUntilClosed().isEmpty)
    }

    @Test(arguments: [
        ("a length below 5", [0, 0, 0, 3, 0x04, 0, 0] as [UInt8], ErrorCode.malformedFrame, UInt32(0)),
        ("a length over the limit", [0xFF, 0xFF, 0xFF, 0xFF], .frameTooLarge, 0),
        ("bytes left over in a whole frame", [0, 0, 0, 6, 0x04, 0, 0, 0, 9, 0xAA], .malformedFrame, 9),
        ("an unknown type in a whole frame", [0, 0, 0, 5, 0x33, 0, 0, 0, 9], .unknownMessageType, 9),
        ("a duplicate subscription id", Message.subscribe(after: nil).frame(requestID: 1)
            + Message.subscribe(after: nil).frame(requestID: 1), .duplicateRequestID, 1),
    ])
    func aClosingErrorCarriesTheIdOfTheWholeFrameThatCausedItElseZero(
        what: String, bytes: [UInt8], code: ErrorCode, requestID: UInt32
    ) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.sendRaw(bytes)
        // The first subscribe's snapshot may come first; the error is what this is about.
        let (frame, message) = try client.receive { $0.type == Message.Kind.error.rawValue }
        #expect(isError(message, code), "\(what): \(message)")
        #expect(frame.requestID == requestID, "\(what)")
        let rest = try client.readUntilClosed()  // closed after it; at most the first subscription's snapshot before
        #expect(rest.allSatisfy { if case .snapshot = $0 { true } else { false } }, "\(what): \(rest)")
    }

    @Test func requestIDZeroIsAnsweredLikeAnyOther() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send(.ping(nonce: 8), id: 0)
        let (frame, message) = try client.receive()
        #expect(frame.requestID == 0 && message == .pong(nonce: 8))
    }

    @Test func readsReusingOneIdAreEachAnsweredInTheOrderSent() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let made) = try client.request(.create(id: nil, insertMicros: nil, content: "read twice"))
        else { throw TestClient.Failure.closed }
        try client.send(.get(id: made.id), id: 70)
        try client.send(.get(id: UUID()), id: 70)
        try client.send(.ping(nonce: 1), id: 70)
        let answers = try (0..<3).map { _ in try client.receive { $0.requestID == 70 }.1 }
        #expect(answers[0] == .memo(made))
        #expect(isError(answers[1], .notFound))
        #expect(answers[2] == .pong(nonce: 1))
    }

    @Test func permissionIsCheckedBeforeExistence() throws {
        let server = try TestServer()
        defer { server.stop() }
        let reader = try server.connect("reader")
        let missing = UUID()
        #expect(isError(try reader.request(.update(id: missing, expectedRevision: 9, content: "x")), .permissionDenied))
        #expect(isError(try reader.request(.delete(id: missing, expectedRevision: nil)), .permissionDenied))
    }

    @Test func anUpdateWithUnchangedContentIsStillAChangeWithANewRevision() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let made) = try client.request(.create(id: nil, insertMicros: nil, content: "same"))
        else { throw TestClient.Failure.closed }
        let subscription = try client.send(.subscribe(after: 1))
        #expect(try client.receive { $0.requestID == subscription }.1 == .subscribed(head: 1))
        guard case .memo(let updated) = try client.request(.update(id: made.id, expectedRevision: 1, content: "same"))
        else { throw TestClient.Failure.closed }
        #expect(updated.revision == 2 && updated.content == "same" && updated.updateMicros >= made.updateMicros)
        let change = try nextChange(client, subscription: subscription)
        #expect(change.revision == 2 && change.kind == .updated)
    }

    @Test func aCreateReusingADeletedMemosIdMakesANewMemo() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        let id = UUID()
        guard case .memo(let first) = try client.request(.create(id: id, insertMicros: 100, content: "first"))
        else { throw TestClient.Failure.closed }
        _ = try client.request(.delete(id: id, expectedRevision: nil))
        guard case .memo(let second) = try client.request(.create(id: id, insertMicros: nil, content: "second"))
        else { throw TestClient.Failure.closed }
        #expect(second.id == id && second.revision == 3 && second.content == "second")
        #expect(second.insertMicros != first.insertMicros)
    }

    @Test func aCreateRetriedWithOtherDatesAnswersTheStoredMemoUnchanged() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        let id = UUID()
        guard case .memo(let made) = try client.request(.create(id: id, insertMicros: 1_000, content: "once"))
        else { throw TestClient.Failure.closed }
        #expect(try client.request(.create(id: id, insertMicros: 2_000, content: "once")) == .memo(made))
        #expect(try client.request(.create(id: id, insertMicros: 1_000, updateMicros: 3_000, content: "once"))
            == .memo(made))
        #expect(server.store.revision == 1)
    }

    @Test func aCreateMayCarryBothDatesButNotAnUpdateBeforeTheInsert() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let made) = try client.request(
            .create(id: nil, insertMicros: 1_000, updateMicros: 5_000, content: "restored"))
        else { throw TestClient.Failure.closed }
        #expect(made.insertMicros == 1_000 && made.updateMicros == 5_000)
        let backwards = try client.request(.create(id: nil, insertMicros: 5_000, updateMicros: 1_000, content: "no"))
        #expect(isError(backwards, .invalidRequest), "\(backwards)")
        #expect(try client.request(.ping(nonce: 1)) == .pong(nonce: 1))
    }

    @Test func historyGoneNamesTheLowestRevisionAResumeAcceptsAlsoForARevisionPastTheHead() throws {
        let server = try TestServer(store: MemoryStore(historyCapacity: 2))
        defer { server.stop() }
        let client = try server.connect()
        for i in 0..<4 { _ = try client.request(.create(id: nil, insertMicros: nil, content: "m\(i)")) }
        #expect(try client.request(.subscribe(after: 1)) == .historyGone(requested: 1, oldestAvailable: 2))
        #expect(try client.request(.subscribe(after: 9)) == .historyGone(requested: 9, oldestAvailable: 2))
        #expect(try client.request(.subscribe(after: 2)) == .subscribed(head: 4))
    }

    @Test func writesLeftUnansweredBy301WereAppliedAndARetryByIdMakesNoSecondMemo() throws {
        // An outbound limit below two answers: the second answer queued overflows it, as a pipelining client
        // that never reads overflows 8 MiB. No session ticket: its record (about 1.3 KB, the client certificate
        // inside) would be queued ahead of the first answer and overflow a limit this small on its own; the
        // server's flag takes no limit below 64 KiB.
        var limits = ServerLimits()
        limits.maxOutboundBytes = 400
        let server = try TestServer(limits: limits, sessionTickets: false)
        defer { server.stop() }
        let pipeliner = try server.connect()
        let ids = (0..<20).map { _ in UUID() }
        let content = String(repeating: "x", count: 200)
        try pipeliner.sendRaw(ids.enumerated().flatMap { index, id in
            Message.create(id: id, insertMicros: nil, content: content).frame(requestID: UInt32(100 + index))
        })
        let messages = try pipeliner.readUntilClosed()
        #expect(messages.contains { if case .goingAway(.slowConsumer, _) = $0 { true } else { false } })
        let answered = Set(messages.compactMap { message -> UUID? in
            if case .memo(let memo) = message { return memo.id }
            return nil
        })
        let applied = Set(ids.filter { (try? server.store.memo($0)) != nil })
        #expect(answered.isSubset(of: applied))
        #expect(!applied.subtracting(answered).isEmpty, "every applied write was answered: \(messages)")

        // Retrying every create by id: the applied ones come back unchanged, the others are made, none twice.
        let retrier = try server.connect()
        for id in ids {
            let reply = try retrier.request(.create(id: id, insertMicros: nil, content: content))
            guard case .memo(let memo) = reply else {
                Issue.record("a retried create got \(reply)")
                return
            }
            if applied.contains(id) { #expect(try memo == server.store.memo(id) && memo.revision <= applied.count) }
        }
        #expect(server.store.revision == 20)
        #expect(server.store.snapshot().memos.count == 20)
    }

    @Test func refusedWritesAreLoggedWithTheConnectionsName() throws {
        let log = Recorder<String>()
        let server = try TestServer(log: ServerLog { log.record($0) })
        defer { server.stop() }
        let writer = try server.connect()
        let reader = try server.connect("reader")
        let id = UUID()
        _ = try writer.request(.create(id: id, insertMicros: nil, content: "a"))
        _ = try writer.send(.create(id: id, insertMicros: nil, content: "b"), id: 40)
        _ = try writer.receive { $0.requestID == 40 }
        _ = try reader.send(.delete(id: id, expectedRevision: nil), id: 41)
        _ = try reader.receive { $0.requestID == 41 }
        let lines = log.values.filter { $0.hasPrefix("refused ") }
        let idText = id.uuidString.lowercased()
        #expect(lines.contains {
            $0.hasPrefix("refused conn=") && $0.contains(" cn=client request=40 create id=\(idText): 201 conflict")
        }, "\(lines)")
        #expect(lines.contains {
            $0.contains(" cn=reader request=41 delete id=\(idText): 204 permission-denied")
        }, "\(lines)")
        #expect(lines.count == 2)
    }

    @Test func error304IsNamedFrameTimeout() {
        #expect(ErrorCode(rawValue: 304).name == "frame-timeout")
        #expect(ErrorCode.frameTimeout.rawValue == 304)
    }
}
