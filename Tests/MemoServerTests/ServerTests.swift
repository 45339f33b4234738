import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoSQLite
import MemoServer
import MemoStore
import MemoTLS
import MemoWire
import ServerTestSupport
import Testing

/// Waits for the next `change` on subscription `id`.
func nextChange(_ client: TestClient, subscription id: UInt32) throws -> Change {
    let (_, message) = try client.receive { $0.requestID == id }
    guard case .change(let change) = message else { throw TestClient.Failure.timedOut("a change, got \(message)") }
    return change
}

@Suite("Server: requests, subscriptions and roles over real TLS on loopback")
struct ServerTests {
    @Test func twoClientsSubscribeOneWritesBothSeeEveryChangeInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let writer = try server.connect()
        let watcher = try server.connect()
        let first = try #require({ () throws -> Memo? in
            if case .memo(let memo) = try writer.request(.create(id: nil, insertMicros: nil, content: "before")) {
                return memo
            }
            return nil
        }())
        let writerSub = try writer.send(.subscribe(after: nil))
        let watcherSub = try watcher.send(.subscribe(after: nil))
        for (client, sub) in [(writer, writerSub), (watcher, watcherSub)] {
            let (_, message) = try client.receive { $0.requestID == sub }
            #expect(message == .snapshot(revision: 1, last: true, memos: [first]))
        }
        _ = try writer.request(.create(id: nil, insertMicros: nil, content: "둘째"))
        _ = try writer.request(.update(id: first.id, expectedRevision: 1, content: "after"))
        _ = try writer.request(.delete(id: first.id, expectedRevision: 3))
        for (client, sub) in [(writer, writerSub), (watcher, watcherSub)] {
            let changes = try (0..<3).map { _ in try nextChange(client, subscription: sub) }
            #expect(changes.map(\.revision) == [2, 3, 4])
            #expect(changes.map(\.kind) == [.created, .updated, .deleted])
            #expect(changes[0].memo.content == "둘째")
            #expect(changes[1].memo.content == "after")
        }
    }

    @Test func everyRequestKindIsAnswered() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        let id = UUID()
        guard case .memo(let made) = try client.request(.create(id: id, insertMicros: 5, content: "x")) else {
            Issue.record("create was not answered with a memo")
            return
        }
        #expect(made.id == id && made.insertMicros == 5)
        #expect(try client.request(.create(id: id, insertMicros: 5, content: "x")) == .memo(made))
        guard case .error(.conflict, _) = try client.request(.create(id: id, insertMicros: nil, content: "y")) else {
            Issue.record("a create reusing an id for other content was not a conflict")
            return
        }
        #expect(try client.request(.get(id: id)) == .memo(made))
        guard case .error(.notFound, _) = try client.request(.get(id: UUID())) else {
            Issue.record("get of a missing memo was not not-found")
            return
        }
        guard case .error(.conflict, _) = try client.request(.update(id: id, expectedRevision: 9, content: "z")) else {
            Issue.record("a stale update was not a conflict")
            return
        }
        guard case .error(.contentTooLarge, _) = try client.request(
            .update(id: id, expectedRevision: nil, content: String(repeating: "a", count: 70_000)))
        else {
            Issue.record("oversized content was not refused")
            return
        }
        #expect(try client.request(.list) == .memos(revision: 1, last: true, memos: [made]))
        #expect(try client.request(.ping(nonce: 99)) == .pong(nonce: 99))
        guard case .error(.unknownSubscription, _) = try client.request(.unsubscribe(subscription: 77)) else {
            Issue.record("unsubscribe of an unknown subscription was not refused")
            return
        }
        let sub = try client.send(.subscribe(after: 1))
        #expect(try client.receive { $0.requestID == sub }.1 == .subscribed(head: 1))
        #expect(try client.request(.unsubscribe(subscription: sub)) == .ok)
        guard case .memo(let deleted) = try client.request(.delete(id: id, expectedRevision: 1)) else {
            Issue.record("delete was not answered with the memo")
            return
        }
        #expect(deleted.revision == 2)
    }

    @Test func aLargeListComesInChunksUnderTheFrameLimit() throws {
        var limits = ServerLimits()
        limits.maxFrameSize = 128 * 1024
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let client = try server.connect()
        let content = String(repeating: "메", count: 10_000)  // 30,000 bytes
        for _ in 0..<10 { _ = try client.request(.create(id: nil, insertMicros: nil, content: content)) }
        let id = try client.send(.list)
        var memos: [Memo] = []
        var chunks = 0
        while true {
            let (frame, message) = try client.receive { $0.requestID == id }
            #expect(frame.payload.count + WireProtocol.headerSize <= 128 * 1024)
            guard case .memos(_, let last, let part) = message else { break }
            chunks += 1
            memos += part
            if last { break }
        }
        #expect(memos.count == 10)
        #expect(chunks >= 3)
    }

    @Test func resumingFromARevisionSendsWhatWasMissedOrHistoryGone() throws {
        let store = MemoryStore(historyCapacity: 2)
        let server = try TestServer(store: store)
        defer { server.stop() }
        let client = try server.connect()
        for i in 0..<4 { _ = try client.request(.create(id: nil, insertMicros: nil, content: "m\(i)")) }
        let resumed = try client.send(.subscribe(after: 2))
        #expect(try client.receive { $0.requestID == resumed }.1 == .subscribed(head: 4))
        #expect(try nextChange(client, subscription: resumed).revision == 3)
        #expect(try nextChange(client, subscription: resumed).revision == 4)
        _ = try client.request(.create(id: nil, insertMicros: nil, content: "live"))
        #expect(try nextChange(client, subscription: resumed).revision == 5)
        let gone = try client.send(.subscribe(after: 1))
        #expect(try client.receive { $0.requestID == gone }.1 == .historyGone(requested: 1, oldestAvailable: 3))
    }

    @Test func aReadOnlyCertificateCanReadButNotWrite() throws {
        let server = try TestServer()
        defer { server.stop() }
        let reader = try server.connect("reader", hello: false)
        guard case .welcome(_, _, _, let role, _) = try reader.hello() else {
            Issue.record("the hello was not answered with a welcome")
            return
        }
        #expect(role == .readOnly)
        for write in [Message.create(id: nil, insertMicros: nil, content: "no"),
                      .update(id: UUID(), expectedRevision: nil, content: "no"), .delete(id: UUID(), expectedRevision: nil)]
        {
            guard case .error(.permissionDenied, _) = try reader.request(write) else {
                Issue.record("a read-only client could write")
                return
            }
        }
        #expect(try reader.request(.list) == .memos(revision: 0, last: true, memos: []))
        #expect(server.store.revision == 0)
    }
}
