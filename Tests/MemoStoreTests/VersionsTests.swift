import Foundation
import MemoModel
@testable import MemoSQLite
import MemoStore
import MemoTestSupport
import StoreTestSupport
import Synchronization
import Testing

/// A clock tests step by hand (days at a time, for the trash).
final class SteppedClock: Sendable {
    private let micros = Atomic<Int64>(Date().unixMicros)
    func now() -> Int64 { micros.add(1, ordering: .relaxed).newValue }
    func advance(hours: Int) { micros.add(Int64(hours) * 3_600_000_000, ordering: .relaxed) }
}

/// Waits for an async condition, polling with a deadline. - Returns: whether it held before the deadline.
func eventually(seconds: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

let alice = Author(name: "alice", serial: "0A1B")
let bob = Author(name: "bob", serial: "2C3D")
let carol = Author(name: "캐롤", serial: "4E5F")

@Suite("Versions, authors, trash and restore: the same from the memory, SQLite and PostgreSQL stores")
struct VersionsTests {
    @Test(arguments: StoreKind.allCases)
    func everyChangeKeepsItsAuthorAndTheVersionsReadNewestFirstInPages(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let created = try await store.perform(.create(id: id, content: "one", insertMicros: nil, author: alice))
        #expect(created.author == alice)
        let second = try await store.perform(.update(id: id, content: "two", expectedRevision: nil, author: bob))
        let third = try await store.perform(.update(id: id, content: "셋", expectedRevision: nil, author: carol))
        #expect(try store.memo(id).author == carol)

        let page = try await store.history(id: id, limit: 2)
        #expect(page.versions.map(\.revision) == [third.revision, second.revision])
        #expect(page.versions.map(\.author) == [carol, bob])
        #expect(page.versions.map(\.kind) == [.update, .update])
        #expect(page.versions[0].content.utf8.elementsEqual("셋".utf8))
        #expect(page.versions[0].micros == third.updateMicros)
        #expect(page.more)
        let rest = try await store.history(id: id, limit: 2, before: second.revision)
        #expect(rest.versions.map(\.revision) == [created.revision])
        #expect(rest.versions.map(\.kind) == [.create])
        #expect(rest.versions.map(\.author) == [alice])
        #expect(!rest.more)

        await #expect(throws: MemoError.notFound(UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))) {
            _ = try await store.history(id: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), limit: 5)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func onlyTheLastKVersionsAreKeptAndAnOlderOneCannotBeRestored(kind: StoreKind) async throws {
        let handle = try kind.make(versions: VersionPolicy(keep: 3, trashDays: 30))
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        var revisions = [try await store.perform(.create(id: id, content: "v0", insertMicros: nil)).revision]
        for step in 1...5 {
            revisions.append(try await store.perform(
                .update(id: id, content: "v\(step)", expectedRevision: nil)).revision)
        }
        let page = try await store.history(id: id, limit: 10)
        #expect(page.versions.map(\.content) == ["v5", "v4", "v3"])
        #expect(!page.more)
        await #expect {
            _ = try await store.restore(id: id, revision: revisions[1])
        } throws: { error in
            guard case MemoError.versionNotFound(let failed, let reason) = error else { return false }
            return failed == id && reason.contains("no longer kept")
        }
        #expect(try store.memo(id).content == "v5")
    }

    @Test(arguments: StoreKind.allCases)
    func restoringAVersionIsAnUpdateByTheRestorerThatWatchersSee(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let first = try await store.perform(.create(id: id, content: "first\nline", insertMicros: nil, author: alice))
        let second = try await store.perform(.update(id: id, content: "second", expectedRevision: nil, author: bob))
        let seen = Mutex<[Change]>([])
        let watch = store.observeChanges { change in seen.withLock { $0.append(change) } }
        defer { watch.cancel() }

        await #expect(throws: MemoError.conflict(id: id, expected: first.revision, actual: second.revision)) {
            _ = try await store.restore(id: id, revision: first.revision, expectedRevision: first.revision)
        }
        await #expect {
            _ = try await store.restore(id: id, revision: nil, author: carol)
        } throws: { error in
            guard case MemoError.invalidArgument(let message) = error else { return false }
            return message.contains("name the revision")
        }
        let restored = try await store.restore(
            id: id, revision: first.revision, expectedRevision: second.revision, author: carol)
        #expect(restored.content.utf8.elementsEqual("first\nline".utf8))
        #expect(restored.revision == second.revision + 1)
        #expect(restored.author == carol)
        #expect(restored.insertMicros == first.insertMicros)
        #expect(try store.memo(id) == restored)
        #expect(await eventually { seen.withLock { $0.contains { $0.revision == restored.revision } } })
        #expect(seen.withLock { $0.first { $0.revision == restored.revision }?.kind } == .updated)
        let page = try await store.history(id: id, limit: 10)
        #expect(page.versions.map(\.kind) == [.restore, .update, .create])
        #expect(page.versions.map(\.author) == [carol, bob, alice])
    }

    @Test(arguments: StoreKind.allCases)
    func aDeletedMemoGoesToTheTrashWithItsVersionsAndComesBackUnderItsId(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let other = try await store.perform(.create(id: UUID(), content: "stays", insertMicros: nil))
        let made = try await store.perform(.create(id: id, content: "한글 메모", insertMicros: nil, author: alice))
        let edited = try await store.perform(.update(id: id, content: "edited", expectedRevision: nil, author: alice))
        let deleted = try await store.perform(.delete(id: id, expectedRevision: nil, author: bob))

        let trash = try await store.trash(limit: 10)
        #expect(trash.entries.count == 1)
        let entry = try #require(trash.entries.first)
        #expect(entry.memo.id == id)
        #expect(entry.revision == deleted.revision)
        #expect(entry.deletedBy == bob)
        #expect(entry.memo.content == "edited")
        #expect(entry.memo.insertMicros == made.insertMicros)
        #expect(!trash.more)
        #expect(try await store.history(id: id, limit: 10).versions.map(\.revision) == [edited.revision, made.revision])

        await #expect(throws: MemoError.conflict(id: id, expected: edited.revision, actual: deleted.revision)) {
            _ = try await store.restore(id: id, revision: nil, expectedRevision: edited.revision)
        }
        let back = try await store.restore(id: id, revision: nil, expectedRevision: deleted.revision, author: carol)
        #expect(back.id == id)
        #expect(back.content == "edited")
        #expect(back.insertMicros == made.insertMicros)
        #expect(back.revision == deleted.revision + 1)
        #expect(back.author == carol)
        #expect(try store.memo(id) == back)
        #expect(store.snapshot().memos.map(\.id) == [id, other.id])
        #expect(try await store.trash(limit: 10).entries.isEmpty)
        let versions = try await store.history(id: id, limit: 10).versions
        #expect(versions.map(\.kind) == [.restore, .update, .create])
        #expect(versions.map(\.author) == [carol, alice, alice])

        // Deleted again and brought back at an older version.
        let again = try await store.perform(.delete(id: id, expectedRevision: nil))
        let older = try await store.restore(id: id, revision: made.revision, expectedRevision: again.revision)
        #expect(older.content.utf8.elementsEqual("한글 메모".utf8))
    }

    @Test(arguments: StoreKind.allCases)
    func theTrashIsPurgedAfterItsDaysWithTheVersionsAndARestoreThenSaysWhy(kind: StoreKind) async throws {
        let clock = SteppedClock()
        let handle = try kind.make(versions: VersionPolicy(keep: 50, trashDays: 2), clock: { clock.now() })
        defer { handle.store.close() }
        let store = handle.store
        let kept = UUID()
        let purged = UUID()
        _ = try await store.perform(.create(id: purged, content: "old", insertMicros: nil))
        _ = try await store.perform(.delete(id: purged, expectedRevision: nil))
        clock.advance(hours: 24)
        _ = try await store.perform(.create(id: kept, content: "newer", insertMicros: nil))
        _ = try await store.perform(.delete(id: kept, expectedRevision: nil))
        #expect(try await store.trash(limit: 10).entries.map(\.memo.id) == [kept, purged])

        clock.advance(hours: 36)  // 2.5 days after the first delete, 1.5 after the second: the first is purged
        let probe = try await store.perform(.create(id: UUID(), content: "a write wakes the pass", insertMicros: nil))
        #expect(await eventually { (try? await store.trash(limit: 10).entries.map(\.memo.id)) == [kept] })
        await #expect(throws: MemoError.notFound(purged)) { _ = try await store.history(id: purged, limit: 5) }
        await #expect {
            _ = try await store.restore(id: purged, revision: nil)
        } throws: { error in
            guard case MemoError.versionNotFound(let id, let reason) = error else { return false }
            return id == purged && reason.contains("not in the trash")
        }
        #expect(try store.memo(probe.id) == probe)
    }

    @Test(arguments: StoreKind.allCases)
    func withNoTrashDaysADeleteForgetsTheMemoAtOnce(kind: StoreKind) async throws {
        let handle = try kind.make(versions: VersionPolicy(keep: 50, trashDays: 0))
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        _ = try await store.perform(.create(id: id, content: "gone", insertMicros: nil))
        _ = try await store.perform(.delete(id: id, expectedRevision: nil))
        #expect(try await store.trash(limit: 10).entries.isEmpty)
        await #expect(throws: MemoError.notFound(id)) { _ = try await store.history(id: id, limit: 5) }
    }

    @Test(arguments: StoreKind.allCases)
    func withVersionsOffAMemoHasNoHistoryButTheTrashStillWorks(kind: StoreKind) async throws {
        let handle = try kind.make(versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        _ = try await store.perform(.create(id: id, content: "a", insertMicros: nil, author: alice))
        _ = try await store.perform(.update(id: id, content: "b", expectedRevision: nil, author: bob))
        #expect(try await store.history(id: id, limit: 5).versions.isEmpty)
        #expect(try store.memo(id).author == bob)
        _ = try await store.perform(.delete(id: id, expectedRevision: nil))
        #expect(try await store.trash(limit: 5).entries.map(\.memo.content) == ["b"])
        #expect(try await store.restore(id: id, revision: nil).content == "b")
    }

    @Test(arguments: StoreKind.allCases)
    func aMemoBackFromTheTrashStillKeepsOnlyItsLastKVersions(kind: StoreKind) async throws {
        let handle = try kind.make(versions: VersionPolicy(keep: 3, trashDays: 30))
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        _ = try await store.perform(.create(id: id, content: "v0", insertMicros: nil))
        _ = try await store.perform(.update(id: id, content: "v1", expectedRevision: nil))
        _ = try await store.perform(.delete(id: id, expectedRevision: nil))
        _ = try await store.restore(id: id, revision: nil)
        for step in 2...5 {
            _ = try await store.perform(.update(id: id, content: "v\(step)", expectedRevision: nil))
        }
        let versions = try await store.history(id: id, limit: 10).versions
        #expect(versions.map(\.content) == ["v5", "v4", "v3"])
        #expect(versions.map(\.kind) == [.update, .update, .update])
        #expect(try await store.trash(limit: 10).entries.isEmpty)
        // Deleted again, it is in the trash once, with those versions.
        _ = try await store.perform(.delete(id: id, expectedRevision: nil))
        #expect(try await store.trash(limit: 10).entries.map(\.memo.content) == ["v5"])
        #expect(try await store.history(id: id, limit: 10).versions.map(\.content) == ["v5", "v4", "v3"])
    }

    /// Schema version 4: a create or an update with versions kept writes no page more than with versions off. With
    /// version 3's index by id, each wrote one random leaf of it more: about 20 frames more for 20 writes. (A kept
    /// version's row is a few bytes longer, its links, so its leaves split a little sooner: 3 frames of slack.)
    @Test func aCreateOrAnUpdateWithVersionsKeptWritesNoMorePagesThanWithNone() async throws {
        let on = try await framesWritten(keep: 50)
        let off = try await framesWritten(keep: 0)
        #expect(on.creates <= off.creates + 3, "creates: \(on.creates) WAL frames with K = 50, \(off.creates) with K = 0")
        #expect(on.updates <= off.updates + 3, "updates: \(on.updates) WAL frames with K = 50, \(off.updates) with K = 0")
    }

    /// The frames the write-ahead log gains from 20 creates, then from 20 updates (each its own transaction) of a
    /// store of 3,000 memos with 2 versions each.
    private func framesWritten(keep: Int) async throws -> (creates: Int, updates: Int) {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let store = try SQLiteStore(path: path, versions: VersionPolicy(keep: keep, trashDays: 30))
        defer { store.close() }
        let ids = (0..<3000).map { _ in UUID() }
        let content = String(repeating: "x", count: 64)
        for ops in [
            ids.map { WriteOp.create(id: $0, content: content, insertMicros: nil) },
            ids.map { WriteOp.update(id: $0, content: content + "2", expectedRevision: nil) },
        ] {
            let done = Recorder<[Result<WriteOutcome, MemoError>]>()
            store.submit(ops) { done.record($0) }
            await done.wait(for: 1)
        }
        let checkpoint = try SQLiteDatabase(path: path)
        defer { checkpoint.close() }
        let pageSize = try checkpoint.prepare("PRAGMA page_size")
        let frameSize = (try pageSize.step() ? Int(pageSize.int64(0)) : 4096) + 24
        pageSize.reset()
        func frames() throws -> Int {
            let size = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            return max(0, size - 32) / frameSize
        }
        try checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(try frames() == 0)
        for _ in 0..<20 { _ = try await store.perform(.create(id: UUID(), content: content, insertMicros: nil)) }
        let afterCreates = try frames()
        for index in 0..<20 {
            let id = ids[(index * 997) % ids.count]
            _ = try await store.perform(.update(id: id, content: content + "\(index)", expectedRevision: nil))
        }
        return (afterCreates, try frames() - afterCreates)
    }

    @Test func aReopenedFileKeepsAuthorsVersionsAndTheTrash() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let id = UUID()
        let gone = UUID()
        do {
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            _ = try await store.perform(.create(id: id, content: "a", insertMicros: nil, author: alice))
            _ = try await store.perform(.update(id: id, content: "b", expectedRevision: nil, author: bob))
            _ = try await store.perform(.create(id: gone, content: "bye", insertMicros: nil, author: alice))
            _ = try await store.perform(.delete(id: gone, expectedRevision: nil, author: carol))
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try store.memo(id).author == bob)
        #expect(try await store.history(id: id, limit: 5).versions.map(\.author) == [bob, alice])
        #expect(try await store.trash(limit: 5).entries.map(\.deletedBy) == [carol])
        let changes = try store.changes(after: 0).changes
        #expect(changes.map(\.memo.author) == [alice, bob, alice, carol])
    }

    @Test func aReopenedFilesMemosByOneAuthorShareOneAuthor() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let serial = String(repeating: "5A", count: 20)
        do {
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            for index in 0..<8 {
                // Each made afresh, as each connection's certificate gives its own.
                let author = Author(name: index % 2 == 0 ? "alice" : "bob", serial: serial)
                _ = try await store.perform(
                    .create(id: UUID(), content: "\(index)", insertMicros: nil, author: author))
            }
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let memos = try #require(store.memoList().value).sorted { $0.revision < $1.revision }
        let alice = try #require(memos.first?.author)
        let bob = memos[1].author
        #expect(alice.name == "alice" && bob.name == "bob" && alice.serial == serial)
        #expect(memos.count == 8 && !alice.isShared(with: bob))
        #expect(memos.enumerated().allSatisfy { $0.element.author.isShared(with: $0.offset % 2 == 0 ? alice : bob) })
        // The history loaded with them shares them too.
        let changes = try store.changes(after: 0).changes
        #expect(changes.count == 8)
        #expect(changes.allSatisfy { $0.memo.author.isShared(with: $0.revision % 2 == 1 ? alice : bob) })
    }

    @Test func aFileMadeByRelease100IsUpgradedKeepingEveryMemoAndStartingEachHistory() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-1.0.0.sqlite")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
        #expect(try Version1File.describe(path: path).version == 2)

        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try Version1File.describe(path: path).version == SQLiteSchema.version)
        let memos = store.snapshot().memos
        #expect(memos.map(\.content) == [
            "edited memo, third text\nwith a second line", "한글 메모: 안녕하세요, 세계", "first memo, kept as it was",
        ])
        #expect(memos[1].content.utf8.elementsEqual("한글 메모: 안녕하세요, 세계".utf8))
        #expect(memos.map(\.revision) == [5, 2, 1])
        #expect(memos.allSatisfy { $0.author == .none })
        for memo in memos {
            let history = try await store.history(id: memo.id, limit: 10)
            #expect(history.versions.count == 1)
            #expect(history.versions.first?.revision == memo.revision)
            #expect(history.versions.first?.content.utf8.elementsEqual(memo.content.utf8) == true)
            #expect(history.versions.first?.author == Author.none)
        }
        #expect(try await store.history(id: memos[0].id, limit: 1).versions.first?.kind == .update)
        #expect(try await store.history(id: memos[2].id, limit: 1).versions.first?.kind == .create)
        // The memo release 1.0.0 deleted is in the trash, dated by its delete.
        let trash = try await store.trash(limit: 10)
        #expect(trash.entries.map(\.memo.content) == ["deleted memo"])
        #expect(trash.entries.map(\.revision) == [7])
        // And the file goes on: an edit by a certificate is a second version.
        let edited = try await store.perform(
            .update(id: memos[1].id, content: "고침", expectedRevision: 2, author: alice))
        #expect(try await store.history(id: edited.id, limit: 10).versions.map(\.author) == [alice, .none])
    }
}
