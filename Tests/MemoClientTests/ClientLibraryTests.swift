import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoServer
import MemoStore
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

@Suite("Client library against a server on loopback")
struct ClientLibraryTests {
    @Test func requestsRoundTripAndServerErrorsBecomeMemoErrors() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }

        let id = UUID()
        let created = try await client.create(content: "안녕 hello", id: id)
        #expect(created.id == id)
        #expect(created.revision == 1)
        // A retried create with the same id and content finds the first memo.
        let again = try await client.create(content: "안녕 hello", id: id)
        #expect(again == created)
        let fetched = try await client.get(id: id)
        #expect(fetched == created)
        let updated = try await client.update(id: id, content: "second", expectedRevision: 1)
        #expect(updated.revision == 2)
        await #expect(throws: MemoError.conflict(id: id, expected: 1, actual: 2)) {
            try await client.update(id: id, content: "third", expectedRevision: 1)
        }
        await #expect(throws: MemoError.self) { try await client.create(content: "other", id: id) }
        let listed = try await client.list()
        #expect(listed.memos.map(\.id) == [id])
        let deleted = try await client.delete(id: id, expectedRevision: 2)
        #expect(deleted.content == "second")
        await #expect(throws: MemoError.notFound(id)) { try await client.get(id: id) }
    }

    @Test func pipelinedRequestsAreAnsweredByID() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let memos = try await withThrowingTaskGroup(of: Memo.self) { group in
            for index in 0..<200 { group.addTask { try await client.create(content: "memo \(index)") } }
            var all: [Memo] = []
            for try await memo in group { all.append(memo) }
            return all
        }
        #expect(Set(memos.map(\.revision)) == Set(1...200))
        #expect(try await client.list().memos.count == 200)
    }

    @Test func refusedCertificatesAndClosedPortsAreTellable() async throws {
        let server = try TestServer()
        defer { server.stop() }
        // A CA the server does not know.
        let other = try TestCertificates()
        var configuration = server.clientConfiguration()
        configuration.certificatePath = other.path + "/client.crt"
        configuration.keyPath = other.path + "/client.key"
        do {
            _ = try await MemoConnection.connect(configuration)
            Issue.record("a client certificate from another CA was accepted")
        } catch ClientError.tlsRefused(_, let error) {
            #expect([.unknownCA, .certificateRejected].contains(error.kind))
        }
        // Nobody listening.
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let port = try closed.localAddress().port
        closed.close()
        var nowhere = server.clientConfiguration()
        nowhere.server = "127.0.0.1:\(port)"
        do {
            _ = try await MemoConnection.connect(nowhere)
            Issue.record("connected to a closed port")
        } catch ClientError.unreachable(_, let reason) {
            #expect(reason.contains("refused"))
        }
    }

    @Test func theMirrorFollowsWritesFromAnotherClient() async throws {
        let server = try TestServer()
        defer { server.stop() }
        _ = try await server.store.create(content: "before", id: nil, insertDate: nil)
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let store = try RemoteStore(client: client)
        let list = store.memoList()
        _ = try await firstValue(of: list, "the snapshot") { $0.map(\.content) == ["before"] }
        let writer = try await MemoConnection.connect(server.clientConfiguration())
        defer { writer.close() }
        let second = try await writer.create(content: "after")
        let seen = try await firstValue(of: list, "the change") { $0.count == 2 }
        #expect(seen.map(\.content) == ["after", "before"])
        #expect(store.revision == second.revision)
        #expect(store.stale.value == false)
    }

    @Test func aLocalWriteShowsAtOnceAndARefusedOneIsRolledBack() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration("reader"))
        defer { client.close() }
        let store = try RemoteStore(client: client)
        let list = store.memoList()
        try await store.waitUntilFresh()
        // Subscribed before the write, so that even an instant refusal cannot hide the pending state.
        let pending = Recorder<Set<UUID>>()
        let subscription = store.pendingWrites.subscribe { pending.record($0) }
        defer { subscription.cancel() }
        await #expect(throws: MemoError.self) {
            try await store.create(content: "not allowed", id: nil, insertDate: nil)
        }
        _ = try await firstValue(of: store.pendingWrites, "the rollback") { $0.isEmpty }
        let states = pending.values
        let shown = try #require(states.firstIndex { !$0.isEmpty }, "the write was never shown as pending")
        #expect(states[shown...].contains { $0.isEmpty })
        #expect(list.value == [])
    }

    @Test func aCachedMirrorIsShownStaleThenResumes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let cache = directory.path + "/mirror.cache"
        let first = try await MemoConnection.connect(server.clientConfiguration())
        let store = try RemoteStore(client: first, cachePath: cache)
        _ = try await store.create(content: "one", id: nil, insertDate: nil)
        try await store.waitUntilFresh()
        _ = try await firstValue(of: store.memoList(), "one memo") { $0.count == 1 }
        try store.saveCache()
        first.close()
        _ = try await server.store.create(content: "two", id: nil, insertDate: nil)

        let second = try MemoConnection.start(server.clientConfiguration())
        defer { second.close() }
        let cached = try RemoteStore(client: second, cachePath: cache)
        #expect(cached.stale.value == true)
        // The cached list comes first. (The list's value, read after the mirror started, may already hold the
        // resumed change: the client's loop applies it as soon as it comes, and a loaded machine can leave this
        // test's thread waiting that long.)
        let deltas = Recorder<ListDelta>()
        let watch = cached.watchList { deltas.record($0) }
        defer { watch.cancel() }
        guard case .reset(let first)? = deltas.values.first else {
            Issue.record("the first delta is not the cached list: \(deltas.values)")
            return
        }
        #expect(first.map(\.content) == ["one"])
        try await cached.waitUntilFresh()
        _ = try await firstValue(of: cached.memoList(), "the resumed change") { $0.map(\.content) == ["two", "one"] }
        #expect(cached.revision == 2)
    }

    @Test func anOfflineStartShowsTheCacheAndRequestsFailWithTheReason() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let cache = directory.path + "/mirror.cache"
        let memo = Memo(id: UUID(), content: "cached", insertMicros: 1, updateMicros: 1, revision: 7)
        try MirrorCache.save(revision: 7, memos: [memo], to: cache)
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let port = try closed.localAddress().port
        closed.close()
        var configuration = server.clientConfiguration(timeout: .milliseconds(300))
        configuration.server = "127.0.0.1:\(port)"
        let client = try MemoConnection.start(configuration)
        defer { client.close() }
        let store = try RemoteStore(client: client, cachePath: cache)
        #expect(store.memoList().value == [memo])
        #expect(store.stale.value == true)
        #expect(store.revision == 7)
        _ = try await firstValue(of: client.connectionState, "offline") { $0 == .offline }
        do {
            _ = try await store.create(content: "later", id: nil, insertDate: nil)
            Issue.record("a write succeeded with no server")
        } catch ClientError.unreachable(_, let reason) {
            #expect(reason.contains("refused"))
        }
        // The refused local write was rolled back; the cached list is still shown.
        _ = try await firstValue(of: store.memoList(), "the rollback") { $0 == [memo] }
        #expect(store.pendingWrites.value == [])
    }

    @Test func aMirrorWhoseHistoryIsGoneIsResetToTheServersListWithNoMadeUpChanges() async throws {
        let server = try TestServer(store: MemoryStore(historyCapacity: 3))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let cache = directory.path + "/mirror.cache"
        let kept = try await server.store.create(content: "kept", id: nil, insertDate: nil)
        let doomed = try await server.store.create(content: "doomed", id: nil, insertDate: nil)
        try MirrorCache.save(revision: doomed.revision, memos: [doomed, kept], to: cache)
        // While the cached mirror was away: more changes than the history holds.
        _ = try await server.store.update(id: kept.id, content: "kept, edited", expectedRevision: kept.revision)
        _ = try await server.store.delete(id: doomed.id, expectedRevision: nil)
        let fleeting = try await server.store.create(content: "fleeting", id: nil, insertDate: nil)
        _ = try await server.store.delete(id: fleeting.id, expectedRevision: nil)
        let fresh = try await server.store.create(content: "fresh", id: nil, insertDate: nil)
        let current = server.store.snapshot()

        let client = try MemoConnection.start(server.clientConfiguration())
        defer { client.close() }
        let store = try RemoteStore(client: client, cachePath: cache)
        let changes = Recorder<Change>()
        let events = Recorder<MirrorEvent>()
        let deltas = Recorder<ListDelta>()
        let changeWatch = store.changes.subscribe { changes.record($0) }
        let eventWatch = store.events.subscribe { events.record($0) }
        let listWatch = store.watchList { deltas.record($0) }
        defer {
            changeWatch.cancel()
            eventWatch.cancel()
            listWatch.cancel()
        }
        try await store.waitUntilFresh()
        let resets = events.values.compactMap { event -> (UInt64, [Memo], Bool)? in
            guard case .reset(let revision, let memos, let resync) = event else { return nil }
            return (revision, memos, resync)
        }
        #expect(resets.count == 1)
        #expect(resets.first?.0 == current.revision)
        #expect(resets.first?.1 == current.memos)
        #expect(resets.first?.2 == true)
        // No change is made up for what the mirror missed.
        #expect(changes.values.isEmpty)
        // The list's watchers get the cached list, then the server's whole list as a reset.
        #expect(deltas.values == [.reset([doomed, kept]), .reset(current.memos)])
        #expect(store.memoList().value?.map(\.id) == [fresh.id, kept.id])
        #expect(store.revision == current.revision)
    }
}
