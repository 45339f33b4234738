import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoServer
import MemoStore
import MemoTestSupport
import ServerTestSupport
import Testing

/// A free address with nothing listening (a server that was there and stopped), its certificates, and a client
/// configuration for it that reconnects quickly.
private func stoppedServer() throws -> (String, TestCertificates, ClientConfiguration) {
    let first = try TestServer()
    var configuration = first.clientConfiguration()
    first.stop()
    configuration.reconnect = ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100))
    return (first.address.description, first.certificates, configuration)
}

@Suite("RemoteStore: writes made while the server is away are queued on disk and sent in order when it is back")
struct ClientOfflineQueueTests {
    @Test func queuedWritesShowAtOnceAreKeptInTheFileAndReachTheServerInOrder() async throws {
        let (address, certificates, configuration) = try stoppedServer()
        let folder = try TemporaryDirectory()
        let queuePath = folder.path + "/mirror.queue"
        let client = try MemoConnection.start(configuration)
        defer { client.close() }
        let store = try RemoteStore(client: client, cachePath: folder.path + "/mirror.cache", queuePath: queuePath)
        store.startMirror()

        // Each write returns at once (the request timeout is 10 s) and shows in the list.
        let clock = ContinuousClock()
        let started = clock.now
        let made = try await store.create(content: "오프라인 메모", id: nil, insertDate: nil)
        let edited = try await store.update(id: made.id, content: "오프라인 메모, 고침", expectedRevision: made.revision)
        let other = try await store.create(content: "곧 지울 메모", id: nil, insertDate: nil)
        _ = try await store.delete(id: other.id, expectedRevision: other.revision)
        // Well under the 10 s a write waiting for the network would take (generous: the machine may be loaded).
        #expect(clock.now - started < .seconds(5))
        #expect(edited.content == "오프라인 메모, 고침")
        #expect(store.queuedWrites == 4)
        // The mirror applies each write on the client's loop, so the list may still be catching up: wait for the
        // state after all four (firstValue fails at its deadline), not merely for a list of one.
        let shown = try await firstValue(of: store.memoList(), "the writes on the list") {
            $0.map(\.content) == ["오프라인 메모, 고침"]
        }
        #expect(shown.map(\.id) == [made.id])
        #expect(store.pendingWrites.value == [made.id, other.id])

        // On disk (once the writer, off the client's loop, has written it), in order, the edit and the delete
        // waiting for the revisions their creates will get.
        #expect(store.flushQueueFiles() == nil)
        let saved = try WriteQueueFile.load(from: queuePath).writes
        #expect(saved.map(\.kind) == [.create, .update, .create, .delete])
        #expect(saved.map(\.afterQueued) == [false, true, false, true])

        // The server is back on the same address: everything is sent, confirmed, and the file is gone.
        let serverStore = MemoryStore()
        let server = try MemoServer.start(
            ServerConfiguration(listen: address, certsDirectory: certificates.path), store: serverStore, log: .silent)
        defer {
            server.shutdown(timeout: 5)
            serverStore.close()
        }
        // Generous: the reconnect, four requests and the mirror catching up share a loaded machine.
        _ = try await firstValue(of: store.pendingWrites, "every write confirmed", seconds: 60) { $0.isEmpty }
        #expect(store.queuedWrites == 0)
        #expect(store.flushQueueFiles() == nil)
        #expect(!FileManager.default.fileExists(atPath: queuePath))
        let onServer = serverStore.memoList().value ?? []
        #expect(onServer.map(\.content) == ["오프라인 메모, 고침"])
        #expect(onServer.first?.id == made.id)
        // Created, edited; created, deleted: four revisions, in the order they were made.
        #expect(onServer.first?.revision == 2)
    }

    /// The server's store applies each write and answers 505 (`OutcomeUnknownStore`, a test hook standing in for
    /// the PostgreSQL store's real 505, another engineer's change): the queue keeps the write and sends it again
    /// instead of rolling it back as refused.
    @Test func aQueuedWriteOfUnknownOutcomeIsSentAgainNotRolledBack() async throws {
        let (address, certificates, configuration) = try stoppedServer()
        let folder = try TemporaryDirectory()
        let client = try MemoConnection.start(configuration)
        defer { client.close() }
        let store = try RemoteStore(
            client: client, cachePath: folder.path + "/mirror.cache", queuePath: folder.path + "/mirror.queue")
        let refusals = Recorder<RefusedWrite>()
        let watch = store.refusals.subscribe { refusals.record($0) }
        defer { watch.cancel() }
        store.startMirror()
        let made = try await store.create(content: "queued", id: nil, insertDate: nil)
        _ = try await store.update(id: made.id, content: "queued, edited", expectedRevision: made.revision)
        #expect(store.queuedWrites == 2)

        let serverStore = OutcomeUnknownStore(MemoryStore(), armed: [.create, .update])
        let server = try MemoServer.start(
            ServerConfiguration(listen: address, certsDirectory: certificates.path), store: serverStore, log: .silent)
        defer {
            server.shutdown(timeout: 5)
            serverStore.close()
        }
        // Generous: each 505 costs a pause, and the drain's task shares a loaded machine's few threads.
        _ = try await firstValue(of: store.pendingWrites, "every write confirmed", seconds: 60) { $0.isEmpty }
        _ = try await firstValue(of: store.memoList(), "the edit on the list", seconds: 60) {
            $0.map(\.content) == ["queued, edited"]
        }
        #expect(serverStore.withheld == 2)
        #expect(refusals.values.isEmpty)
        #expect(store.queuedWrites == 0)
        // Each applied once: created at 1, edited at 2.
        let onServer = serverStore.snapshot()
        #expect(onServer.memos.map(\.content) == ["queued, edited"])
        #expect(onServer.revision == 2)
    }

    /// A write made while live whose outcome turns out unknown (505 from the same test hook) is not rolled back
    /// and thrown as failed: it joins the queue, stays shown as pending, and is sent again.
    @Test func aLiveWriteOfUnknownOutcomeJoinsTheQueueInsteadOfFailing() async throws {
        let serverStore = OutcomeUnknownStore(MemoryStore(), armed: [.create])
        let server = try TestServer(store: serverStore)
        defer { server.stop() }
        let folder = try TemporaryDirectory()
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let store = try RemoteStore(
            client: client, cachePath: folder.path + "/mirror.cache", queuePath: folder.path + "/mirror.queue")
        try await store.waitUntilFresh()
        let made = try await store.create(content: "saved live", id: nil, insertDate: nil)
        #expect(made.content == "saved live")
        _ = try await firstValue(of: store.pendingWrites, "the write confirmed", seconds: 60) { $0.isEmpty }
        _ = try await firstValue(of: store.memoList(), "the memo on the list", seconds: 60) {
            $0.map(\.id) == [made.id]
        }
        #expect(serverStore.withheld == 1)
        #expect(store.queuedWrites == 0)
        let onServer = serverStore.snapshot()
        #expect(onServer.memos.map(\.content) == ["saved live"])
        #expect(onServer.revision == 1)
    }
}
