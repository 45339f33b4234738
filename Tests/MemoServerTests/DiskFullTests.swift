import Foundation
import MemoModel
import MemoProbe
@testable import MemoSQLite
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// A tmpfs of a few megabytes mounted on a fresh folder: a disk that fills up in a second. Mounting needs root
/// (CAP_SYS_ADMIN); without it the test is cancelled with the reason.
final class SmallFilesystem {
    let directory: TemporaryDirectory
    private var mounted = true
    var path: String { directory.path }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    /// Mounts a tmpfs of `megabytes` on a new folder, or cancels the running test when it cannot.
    static func mount(megabytes: Int) throws -> SmallFilesystem {
        let directory = try TemporaryDirectory()
        guard Glibc.mount("tmpfs", directory.path, "tmpfs", 0, "size=\(megabytes)m,mode=0700") == 0 else {
            let reason = String(cString: strerror(errno))
            try Test.cancel("cannot mount a \(megabytes) MiB tmpfs (needs root with CAP_SYS_ADMIN): \(reason)")
        }
        return SmallFilesystem(directory: directory)
    }

    /// Bytes free on the filesystem.
    var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return -1 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Unmounts (lazily, so that a file still open cannot keep the mount); safe to call twice.
    func unmount() {
        guard mounted else { return }
        mounted = false
        if umount2(directory.path, Int32(MNT_DETACH)) != 0 {
            Issue.record("cannot unmount \(directory.path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { unmount() }
}

/// Every memo of a `list` or a subscription snapshot, whose answer may come in several chunks.
private func collectChunks(_ client: TestClient, requestID: UInt32) throws -> (revision: UInt64, memos: [Memo]) {
    var memos: [Memo] = []
    while true {
        let (_, message) = try client.receive { $0.requestID == requestID }
        switch message {
        case .memos(let revision, let last, let chunk), .snapshot(let revision, let last, let chunk):
            memos += chunk
            if last { return (revision, memos) }
        default:
            throw TestClient.Failure.timedOut("a list chunk, got \(message)")
        }
    }
}

@Suite("Disk full: a SQLite-backed server on a filesystem that fills up", .serialized)
struct DiskFullTests {
    /// The room the store keeps for deletes in the test of deletes: more than the write-ahead log (1.25 MiB at
    /// most), so that the checkpoint after the disk fills can finish. The two tests before keep none: their disks
    /// are too small for one.
    static let reserve = 1536 * 1024

    /// Content of about `size` bytes that names its memo, so that a mix-up shows in the comparison.
    static func content(_ index: Int, size: Int = 30_000) -> String {
        let head = "memo \(index) 메모 "
        return head + String(repeating: String(UnicodeScalar(UInt8(97 + index % 26))), count: size - head.utf8.count)
    }

    @Test func writesFailWithStorageFullReadsGoOnNothingIsLostAndWritesResumeOnceThereIsRoom() throws {
        let disk = try SmallFilesystem.mount(megabytes: 2)
        defer { disk.unmount() }
        // Room the test gives back later by deleting this file.
        let filler = disk.path + "/filler"
        try Data(repeating: 0x55, count: 384 * 1024).write(to: URL(fileURLWithPath: filler))
        let path = disk.path + "/memos.sqlite"
        let log = Recorder<String>()
        let server = try TestServer(
            store: try SQLiteStore(path: path, reserveBytes: 0), log: ServerLog { log.record($0) })
        var running = true
        defer { if running { server.stop() } }
        let writer = try server.connect()
        let watcher = try server.connect()
        let subscription = try watcher.send(.subscribe(after: nil))
        #expect(try collectChunks(watcher, requestID: subscription).memos.isEmpty)

        // Fill the disk.
        var acknowledged: [Memo] = []
        var refusal: (code: ErrorCode, message: String)?
        for index in 0..<200 {
            let reply = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(index)))
            if case .memo(let memo) = reply {
                acknowledged.append(memo)
            } else if case .error(let code, let message) = reply {
                refusal = (code, message)
                break
            } else {
                Issue.record("a create was answered with \(reply)")
                return
            }
        }
        let (code, message) = try #require(refusal, "2 MiB never filled up")
        #expect(code == .storageFull && code.rawValue == 502)
        #expect(message.hasPrefix("storage full: ") && message.contains("disk is full"), "\(message)")
        #expect(acknowledged.count >= 5, "the disk filled after \(acknowledged.count) memos")
        #expect(acknowledged.map(\.revision) == Array(1...UInt64(acknowledged.count)))

        // Still full: another write of that size, and an update that grows a memo, are refused alike.
        let more = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(500)))
        #expect({ if case .error(.storageFull, _) = more { true } else { false } }(), "\(more)")
        let grown = try writer.request(
            .update(id: acknowledged[0].id, expectedRevision: nil, content: Self.content(501, size: 60_000)))
        #expect({ if case .error(.storageFull, _) = grown { true } else { false } }(), "\(grown)")
        // Each failed write is one log line naming the connection.
        let failures = log.values.filter { $0.hasPrefix("storage error conn=") }
        #expect(failures.count == 3, "\(failures)")
        #expect(failures.allSatisfy { $0.contains(" cn=client request=") && $0.contains(": 502 storage-full: ") })

        // The server is up and serves reads from what was acknowledged, unchanged.
        #expect(try writer.request(.ping(nonce: 42)) == .pong(nonce: 42))
        for memo in acknowledged { #expect(try writer.request(.get(id: memo.id)) == .memo(memo)) }
        let listed = try collectChunks(writer, requestID: try writer.send(.list))
        #expect(listed.revision == acknowledged.last?.revision)
        #expect(Set(listed.memos) == Set(acknowledged))
        let late = try server.connect()
        let lateSubscription = try late.send(.subscribe(after: nil))
        let lateSnapshot = try collectChunks(late, requestID: lateSubscription)
        #expect(Set(lateSnapshot.memos) == Set(acknowledged))
        // The watcher saw every acknowledged create and nothing of the refused writes.
        let seen = try acknowledged.map { _ in try nextChange(watcher, subscription: subscription) }
        #expect(seen.map(\.memo) == acknowledged)

        // Make room: writes succeed again, with the next revision (a refused write used none).
        let before = disk.freeBytes
        try FileManager.default.removeItem(atPath: filler)
        #expect(disk.freeBytes > before)
        let next = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(900)))
        guard case .memo(let recovered) = next else {
            Issue.record("after freeing space a create was answered with \(next)")
            return
        }
        #expect(recovered.revision == UInt64(acknowledged.count) + 1)
        #expect(try nextChange(watcher, subscription: subscription).memo == recovered)
        #expect(try nextChange(late, subscription: lateSubscription).memo == recovered)
        acknowledged.append(recovered)

        // Restart: everything acknowledged is in the file, which SQLite finds sound.
        server.stop()
        running = false
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.revision == recovered.revision)
        #expect(Set(reopened.snapshot().memos) == Set(acknowledged))
        reopened.close()
        #expect(try SQLiteStore.integrityCheck(path: path) == ["ok"])
    }

    /// Submits `ops` at once (the writer commits what is waiting together) and returns each result.
    static func submitAll(_ ops: [WriteOp], to store: SQLiteStore) async -> [Result<WriteOutcome, MemoError>] {
        let done = Recorder<Result<WriteOutcome, MemoError>>()
        for op in ops { store.submit(op) { done.record($0) } }
        await done.wait(for: ops.count)
        return done.values
    }

    @Test func smallBatchedWritesFillTheDiskPastCheckpointsAndARestartOnAFullDiskStillServes() async throws {
        let disk = try SmallFilesystem.mount(megabytes: 7)
        defer { disk.unmount() }
        let filler = disk.path + "/filler"
        try Data(repeating: 0x55, count: 1536 * 1024).write(to: URL(fileURLWithPath: filler))
        let path = disk.path + "/memos.sqlite"
        var store = try SQLiteStore(path: path, reserveBytes: 0)
        defer { store.close() }

        // What the store acknowledged, applied in revision order: the memos it must hold.
        var live: [UUID: Memo] = [:]
        var head: UInt64 = 0
        var refused = 0
        func apply(_ results: [Result<WriteOutcome, MemoError>]) {
            var changes: [Change] = []
            for result in results {
                switch result {
                case .success(.change(let change)): changes.append(change)
                case .failure(.storageFull): refused += 1
                default: Issue.record("unexpected result \(result)")
                }
            }
            for change in changes.sorted(by: { $0.revision < $1.revision }) {
                #expect(change.revision == head + 1, "revisions have a gap")
                head = change.revision
                if change.kind == .deleted { live[change.memo.id] = nil } else { live[change.memo.id] = change.memo }
            }
        }
        func round(_ number: Int) async {
            // Twenty creates, an update and a delete of older memos: the writer commits them in a few batches.
            var ops = (0..<20).map { i in
                WriteOp.create(id: UUID(), content: Self.content(number * 20 + i, size: 2_000), insertMicros: nil)
            }
            let older = live.keys.sorted { $0.uuidString < $1.uuidString }
            if older.count > 2 {
                ops.append(.update(id: older[0], content: Self.content(number, size: 3_000), expectedRevision: nil))
                ops.append(.delete(id: older[1], expectedRevision: nil))
            }
            apply(await Self.submitAll(ops, to: store))
        }

        var rounds = 0
        while refused == 0, rounds < 1_000 {
            await round(rounds)
            rounds += 1
        }
        #expect(refused > 0, "7 MiB never filled up")
        // The disk went to memos, not to the write-ahead log: the log is checkpointed at 1 MiB. (With SQLite's
        // default of 1,000 pages this disk filled with a 4.2 MB log, and freeing the filler did not let a
        // checkpoint finish, so writes never came back.)
        let logSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        #expect(logSize < 3 * 512 * 1024, "the log is \(logSize) bytes")
        #expect(rounds > 20, "the disk filled after \(rounds) rounds")
        #expect(store.revision == head)
        #expect(Dictionary(uniqueKeysWithValues: store.snapshot().memos.map { ($0.id, $0) }) == live)

        // A restart on the full disk opens the file and serves reads; writes are still refused.
        store.close()
        store = try SQLiteStore(path: path, reserveBytes: 0)
        #expect(store.revision == head)
        #expect(Dictionary(uniqueKeysWithValues: store.snapshot().memos.map { ($0.id, $0) }) == live)
        refused = 0
        await round(rounds)
        #expect(refused > 0, "a write of 40 kB fitted on the full disk")

        // Room again: every write of a few rounds goes through.
        try FileManager.default.removeItem(atPath: filler)
        refused = 0
        for extra in 1...3 { await round(rounds + extra) }
        #expect(refused == 0)
        store.close()
        #expect(try SQLiteStore.integrityCheck(path: path) == ["ok"])
        store = try SQLiteStore(path: path, reserveBytes: 0)
        #expect(store.revision == head)
        #expect(Dictionary(uniqueKeysWithValues: store.snapshot().memos.map { ($0.id, $0) }) == live)
    }

    /// A store reopened on a full disk with a sweep left to do (versions fell since the last sweep, and the one on
    /// closing could not be written) opens and serves: the sweep is housekeeping and waits for room. The opening
    /// used to run it in the same step and refuse to start with `storage full`, so a server restarted on a full
    /// disk served nothing, reads included.
    @Test func aStoreWithASweepLeftToDoOpensOnAFullDiskAndSweepsOnceThereIsRoom() async throws {
        let disk = try SmallFilesystem.mount(megabytes: 2)
        defer { disk.unmount() }
        let path = disk.path + "/memos.sqlite"
        let policy = VersionPolicy(keep: 1)
        var store = try SQLiteStore(path: path, reserveBytes: 0, versions: policy)
        defer { store.close() }
        // One memo written three times: with one version kept, the first two fall at the next sweep.
        let id = UUID()
        var ops = [WriteOp.create(id: id, content: Self.content(0, size: 20_000), insertMicros: nil)]
        for version in 1...2 {
            ops.append(.update(id: id, content: Self.content(version, size: 20_000), expectedRevision: nil))
        }
        for op in ops {
            let results = await Self.submitAll([op], to: store)
            guard case .success(.change) = results[0] else {
                Issue.record("\(op) was answered \(results[0])")
                return
            }
        }
        let written = try #require(store.snapshot().memos.first)

        // Fill every byte left: the sweep on closing has no room for its pages in the log.
        let filler = disk.path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        let block = [UInt8](repeating: 0x55, count: 4096)
        while write(fd, block, block.count) > 0 {}
        close(fd)
        #expect(disk.freeBytes == 0)
        store.close()

        // The restart on the full disk opens the file and serves what was written; the fallen versions wait.
        store = try SQLiteStore(path: path, reserveBytes: 0, versions: policy)
        #expect(store.snapshot().memos == [written])
        #expect(try Self.olderVersionsKept(path) == 2)

        // Room again: the sweep is written (on closing at the latest) and the file is sound.
        try FileManager.default.removeItem(atPath: filler)
        store.close()
        #expect(try Self.olderVersionsKept(path) == 0)
        #expect(try SQLiteStore.integrityCheck(path: path) == ["ok"])
        store = try SQLiteStore(path: path, reserveBytes: 0, versions: policy)
        #expect(store.snapshot().memos == [written])
    }

    /// The rows of the file at `path` kept as versions other than a memo's current one.
    static func olderVersionsKept(_ path: String) throws -> Int64 {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let count = try database.prepare("SELECT count(*) FROM changes WHERE current = 0 AND version <> 0")
        defer { count.reset() }
        return try count.step() ? count.int64(0) : -1
    }

    /// Issue 24, item 9: a full disk refused deletes too, so no one could make room by deleting memos. Now the
    /// store releases its reserve when the disk fills: deletes go through, other writes are refused with a message
    /// that says so, and once the disk has room for the reserve again every write goes through.
    @Test func aFullDiskStillTakesDeletesAndOtherWritesResumeOnceThereIsRoomForTheReserve() throws {
        let disk = try SmallFilesystem.mount(megabytes: 8)
        defer { disk.unmount() }
        // Freed at the end: more than the 1.5 times the reserve the store waits for.
        let filler = disk.path + "/filler"
        try Data(repeating: 0x55, count: 3 * 1024 * 1024).write(to: URL(fileURLWithPath: filler))
        let path = disk.path + "/memos.sqlite"
        let reservePath = path + "-reserve"
        let server = try TestServer(store: try SQLiteStore(path: path, reserveBytes: Self.reserve))
        var running = true
        defer { if running { server.stop() } }
        let size = try FileManager.default.attributesOfItem(atPath: reservePath)[.size] as? Int
        #expect(size == Self.reserve)
        let writer = try server.connect()
        let watcher = try server.connect()
        let subscription = try watcher.send(.subscribe(after: nil))
        #expect(try collectChunks(watcher, requestID: subscription).memos.isEmpty)

        var acknowledged: [Memo] = []
        var refused = false
        for index in 0..<400 {
            let reply = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(index)))
            if case .memo(let memo) = reply {
                acknowledged.append(memo)
            } else if case .error(.storageFull, _) = reply {
                refused = true
                break
            } else {
                Issue.record("a create was answered with \(reply)")
                return
            }
        }
        #expect(refused, "8 MiB never filled up")
        #expect(acknowledged.count >= 5, "the disk filled after \(acknowledged.count) memos")
        #expect(!FileManager.default.fileExists(atPath: reservePath), "the reserve was not released")

        // Deletes go through on the full disk, in revision order, and reach the watcher.
        var revision = acknowledged.last?.revision ?? 0
        var deleted: [UUID] = []
        for memo in acknowledged.prefix(3) {
            let reply = try writer.request(.delete(id: memo.id, expectedRevision: memo.revision))
            guard case .memo(let gone) = reply else {
                Issue.record("a delete on the full disk was answered \(reply)")
                return
            }
            revision += 1
            #expect(gone.id == memo.id && gone.revision == revision)
            deleted.append(memo.id)
        }
        // Other writes are still refused, and the message says what works and what to do.
        let more = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(500)))
        guard case .error(.storageFull, let message) = more else {
            Issue.record("a create on the full disk after the deletes was answered \(more)")
            return
        }
        #expect(message.contains("disk is full") && message.contains("deletes still work")
                && message.contains("\(Self.reserve * 3 / 2) bytes free"), "\(message)")
        let seen = try (0..<(acknowledged.count + deleted.count)).map { _ in
            try nextChange(watcher, subscription: subscription)
        }
        #expect(seen.filter { $0.kind == .deleted }.map(\.memo.id) == deleted)

        // Room again: the reserve is made again and a create goes through with the next revision.
        try FileManager.default.removeItem(atPath: filler)
        let next = try writer.request(.create(id: nil, insertMicros: nil, content: Self.content(900)))
        guard case .memo(let recovered) = next else {
            Issue.record("after freeing space a create was answered with \(next)")
            return
        }
        #expect(recovered.revision == revision + 1)
        #expect(FileManager.default.fileExists(atPath: reservePath))

        server.stop()
        running = false
        let reopened = try SQLiteStore(path: path, reserveBytes: Self.reserve)
        let ids = Set(reopened.snapshot().memos.map(\.id))
        #expect(ids == Set(acknowledged.map(\.id) + [recovered.id]).subtracting(deleted))
        reopened.close()
        #expect(try SQLiteStore.integrityCheck(path: path) == ["ok"])
    }
}
