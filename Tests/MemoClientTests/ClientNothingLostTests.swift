import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoModel
import MemoNet
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// A server that was there and stopped: its address (free again), its certificates, and client configurations
/// for it (the writer's and the read-only reader's) that reconnect quickly.
private struct StoppedServer {
    let address: String
    let certificates: TestCertificates
    let writer: ClientConfiguration
    let reader: ClientConfiguration

    init() throws {
        let first = try TestServer()
        var writer = first.clientConfiguration()
        var reader = first.clientConfiguration("reader")
        first.stop()
        // Quick after a TLS failure too: the freed port is in the ephemeral range, so a reconnect may meet another
        // test's server on it, or connect to itself (TCP's self-connect), and either ends as a TLS failure, whose
        // 30 s default wait could outlast the test's waits on a loaded machine.
        let quick = ReconnectPolicy(
            initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), refusedDelay: .milliseconds(100))
        writer.reconnect = quick
        reader.reconnect = quick
        (address, certificates) = (first.address.description, first.certificates)
        (self.writer, self.reader) = (writer, reader)
    }

    /// Starts a server on the address again, over `store`. - Returns: a function that stops it.
    func start(_ store: any ServingStore) throws -> @Sendable () -> Void {
        let server = try MemoServer.start(
            ServerConfiguration(listen: address, certsDirectory: certificates.path), store: store, log: .silent)
        return {
            server.shutdown(timeout: 5)
            store.close()
        }
    }
}

/// A store that replays the queue at `queuePath` under `configuration`, with its refusals recorded, once the
/// first refused write is in its not-saved list.
private struct Replay {
    let client: MemoConnection
    let store: RemoteStore
    let refusals = Recorder<RefusedWrite>()
    let watching: Subscription
    let entry: NotSavedWrite

    init(_ queuePath: String, _ configuration: ClientConfiguration) async throws {
        client = try MemoConnection.start(configuration)
        store = try RemoteStore(client: client, queuePath: queuePath)
        let refusals = refusals
        watching = store.refusals.subscribe { refusals.record($0) }
        store.startMirror()
        let kept = try await firstValue(of: store.notSaved, "the refused write in the not-saved list", seconds: 60) {
            !$0.isEmpty
        }
        entry = try #require(kept.first)
    }

    func end() {
        watching.cancel()
        client.close()
    }
}

private func memo(_ content: String, id: UUID = UUID(), revision: UInt64 = 0) -> Memo {
    let now = Date().unixMicros
    return Memo(id: id, content: content, insertMicros: now, updateMicros: now, revision: revision)
}

private func bytes(_ path: String) throws -> Data {
    try Data(contentsOf: URL(fileURLWithPath: path))
}

@Suite("RemoteStore: nothing typed is lost (identity-bound queue, not-saved list, role offline, unwritable queue)")
struct ClientNothingLostTests {
    @Test func aQueueWrittenUnderAnotherCertificateStaysOnDiskUntouchedAndIsNeverReplayed() async throws {
        let stopped = try StoppedServer()
        let folder = try TemporaryDirectory()
        let writerIdentity = try ClientIdentity(stopped.writer)
        let readerIdentity = try ClientIdentity(stopped.reader)
        #expect(writerIdentity.fingerprint.utf8.count == 64)
        #expect(writerIdentity.fingerprint != readerIdentity.fingerprint)
        // The front end keeps one queue per certificate.
        let cache = folder.path + "/mirror-h_1.cache"
        #expect(WriteQueueFile.path(besideCache: cache, fingerprint: writerIdentity.fingerprint)
            != WriteQueueFile.path(besideCache: cache, fingerprint: readerIdentity.fingerprint))
        // A queue the writer's certificate wrote offline, found where the reader's store looks.
        let queuePath = folder.path + "/mirror.queue"
        try WriteQueueFile.save(
            [QueuedWrite(kind: .create, memo: memo("쓰는 인증서로 쓴 메모"), expectedRevision: nil, afterQueued: false)],
            identity: writerIdentity, to: queuePath)
        let before = try bytes(queuePath)

        let serverStore = MemoryStore()
        let stop = try stopped.start(serverStore)
        defer { stop() }
        let client = try await MemoConnection.connect(stopped.reader)
        defer { client.close() }
        let store = try RemoteStore(client: client, cachePath: folder.path + "/mirror.cache", queuePath: queuePath)
        try await store.waitUntilFresh()
        #expect(store.queuedWrites == 0)
        #expect(store.queuePath == nil)
        let problem = try #require(store.queueProblem.value ?? nil)
        #expect(problem.contains("left untouched"), "\(problem)")
        // A round trip after the store is live: a replay would have been sent before it.
        _ = try await client.ping()
        #expect(try bytes(queuePath) == before)
        #expect(serverStore.snapshot().memos.isEmpty)

        // Under the identity that wrote it, it replays.
        let writerClient = try await MemoConnection.connect(stopped.writer)
        defer { writerClient.close() }
        let writerStore = try RemoteStore(client: writerClient, queuePath: queuePath)
        writerStore.startMirror()
        _ = try await firstValue(of: writerStore.pendingWrites, "the queued create confirmed", seconds: 60) {
            $0.isEmpty
        }
        #expect(serverStore.snapshot().memos.map(\.content) == ["쓰는 인증서로 쓴 메모"])
        #expect(writerStore.flushQueueFiles() == nil)
        #expect(!FileManager.default.fileExists(atPath: queuePath))
    }

    @Test func aWriteRefusedAtReplayMovesToTheNotSavedListOnDiskAndCanBeRetriedOrDiscarded() async throws {
        let stopped = try StoppedServer()
        let folder = try TemporaryDirectory()
        let queuePath = folder.path + "/mirror.queue"
        let notSavedPath = NotSavedFile.path(besideQueue: queuePath)
        // Written offline with the read-only certificate (its role not known yet): the server refuses it.
        let offline = try MemoConnection.start(stopped.reader)
        let first = try RemoteStore(client: offline, queuePath: queuePath)
        first.startMirror()
        let typed = try await first.create(content: "읽기 전용으로 쓴 글", id: nil, insertDate: nil)
        #expect(first.queuedWrites == 1)
        #expect(first.flushQueueFiles() == nil)
        offline.close()

        let serverStore = MemoryStore()
        let stop = try stopped.start(serverStore)
        defer { stop() }
        let replay = try await Replay(queuePath, stopped.reader)
        defer { replay.end() }
        let (store, refusals, entry) = (replay.store, replay.refusals, replay.entry)
        #expect(entry.write.memo.id == typed.id)
        #expect(entry.content.utf8.elementsEqual("읽기 전용으로 쓴 글".utf8))
        #expect(!entry.reason.isEmpty)
        #expect(refusals.values.first?.notSavedID == entry.id)
        _ = try await firstValue(of: store.pendingWrites, "the refused write rolled back", seconds: 60) { $0.isEmpty }
        #expect(store.flushQueueFiles() == nil)
        // On disk, 0600, and the queue file is gone: the write moved, it was not deleted.
        #expect(!FileManager.default.fileExists(atPath: queuePath))
        let onDisk = try NotSavedFile.load(from: notSavedPath)
        #expect(onDisk.entries == [entry])
        #expect(try FileManager.default.attributesOfItem(atPath: notSavedPath)[.posixPermissions] as? Int == 0o600)

        // Retried under the same read-only certificate: refused again, and back in the list, never lost.
        store.retryNotSaved(entry.id)
        _ = try await firstValue(of: store.notSaved, "the retry refused again", seconds: 60) {
            $0.count == 1 && $0[0].id != entry.id && $0[0].write.memo.id == typed.id
        }
        #expect(refusals.values.count == 2)
        let again = try #require(store.notSaved.value?.first)
        store.discardNotSaved(again.id)
        #expect(store.notSaved.value == [])
        #expect(store.flushQueueFiles() == nil)
        #expect(!FileManager.default.fileExists(atPath: notSavedPath))
        #expect(serverStore.snapshot().memos.isEmpty)
    }

    @Test func anOfflineEditOfAMemoDeletedElsewhereIsKeptAndOffersSaveAsNew() async throws {
        let stopped = try StoppedServer()
        let folder = try TemporaryDirectory()
        let queuePath = folder.path + "/mirror.queue"
        let serverStore = MemoryStore()
        let original = try await serverStore.create(content: "처음", id: nil, insertDate: nil)
        // Edited offline from revision 1; meanwhile someone deleted it.
        var edited = original
        edited.content = "오프라인에서 고친 글"
        try WriteQueueFile.save(
            [QueuedWrite(kind: .update, memo: edited, expectedRevision: original.revision, afterQueued: false)],
            identity: try ClientIdentity(stopped.writer), to: queuePath)
        _ = try await serverStore.delete(id: original.id, expectedRevision: nil)

        let stop = try stopped.start(serverStore)
        defer { stop() }
        let replay = try await Replay(queuePath, stopped.writer)
        defer { replay.end() }
        let (store, refusals, entry) = (replay.store, replay.refusals, replay.entry)
        #expect(entry.deletedElsewhere)
        // Reported as the online conflict with nothing of theirs: the front end offers `save as new`.
        let refusal = try #require(refusals.values.first)
        #expect(refusal.isConflict)
        #expect(refusal.theirs == nil)

        store.saveNotSavedAsNew(entry.id)
        #expect(store.notSaved.value == [])
        _ = try await firstValue(of: store.pendingWrites, "the new memo confirmed", seconds: 60) { $0.isEmpty }
        let onServer = serverStore.snapshot().memos
        #expect(onServer.count == 1)
        #expect(onServer.first?.content.utf8.elementsEqual("오프라인에서 고친 글".utf8) == true)
        #expect(onServer.first?.id != original.id)
    }

    @Test func theRoleIsRememberedWithTheCacheForItsCertificateOnly() async throws {
        let server = try TestServer()
        let folder = try TemporaryDirectory()
        let cache = folder.path + "/mirror.cache"
        do {
            let client = try await MemoConnection.connect(server.clientConfiguration("reader"))
            defer { client.close() }
            let store = try RemoteStore(client: client, cachePath: cache)
            try await store.waitUntilFresh()
            _ = try await firstValue(of: store.role, "the welcome's role", seconds: 60) { $0 == .readOnly }
            try store.saveCache()
        }
        #expect(try FileManager.default.attributesOfItem(atPath: cache)[.posixPermissions] as? Int == 0o600)
        let readerConfiguration = server.clientConfiguration("reader")
        let writerConfiguration = server.clientConfiguration()
        server.stop()

        // Offline: the same certificate is read-only before any server answers; another certificate is not told.
        let offline = try MemoConnection.start(readerConfiguration)
        defer { offline.close() }
        let store = try RemoteStore(client: offline, cachePath: cache)
        #expect(store.role.value == .readOnly)
        let other = try MemoConnection.start(writerConfiguration)
        defer { other.close() }
        let otherStore = try RemoteStore(client: other, cachePath: cache)
        #expect(otherStore.role.value == .some(nil))
    }

    @Test func aQueueThatCannotBeWrittenIsReportedAndItsWritesStayPendingInMemory() async throws {
        let stopped = try StoppedServer()
        let folder = try TemporaryDirectory()
        let disk = try SmallDisk(in: folder.path + "/disk")
        defer { disk.remove() }
        let queuePath = disk.path + "/mirror.queue"
        let client = try MemoConnection.start(stopped.writer)
        defer { client.close() }
        let store = try RemoteStore(client: client, queuePath: queuePath)
        store.startMirror()

        try disk.fill()
        let text = String(repeating: "가득 찬 디스크 ", count: 2000)
        let made = try await store.create(content: text, id: nil, insertDate: nil)
        #expect(store.pendingWrites.value?.contains(made.id) == true)
        let problem = try await firstValue(of: store.queueProblem, "the queue's failure", seconds: 60) {
            $0 != nil
        } ?? ""
        #expect(problem.contains("kept in memory"), "\(problem)")
        #expect(store.queuedWrites == 1)
        #expect(store.queuedWriteList.map(\.memo.id) == [made.id])

        // Room again: the next change writes the whole queue, and the problem goes.
        disk.free()
        let second = try await store.create(content: "두 번째", id: nil, insertDate: nil)
        _ = try await firstValue(of: store.queueProblem, "the queue written", seconds: 60) { $0 == nil }
        #expect(try WriteQueueFile.load(from: queuePath).writes.map(\.memo.id) == [made.id, second.id])

        // The server is back: both reach it.
        let serverStore = MemoryStore()
        let stop = try stopped.start(serverStore)
        defer { stop() }
        _ = try await firstValue(of: store.pendingWrites, "both confirmed", seconds: 60) { $0.isEmpty }
        #expect(serverStore.snapshot().memos.count == 2)
    }
}
