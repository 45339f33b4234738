import Foundation
import MemoModel
@testable import MemoSQLite
import MemoStore
import MemoTestSupport
import StoreTestSupport
import Testing

/// Schema version 4: a memo's versions found through links from its newest row, the versions past K dropped in
/// bulk, the upgrade from version 3, and nothing kept with versions off.
@Suite("SQLite schema 4: versions by links, dropped in bulk, upgraded from version 3")
struct SQLiteSchema4Tests {
    /// A copy of a fixture in `Fixtures` at a new path.
    private func copy(fixture name: String, in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/memos.sqlite"
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + name)
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
        return path
    }

    private func versionRows(path: String) throws -> Int64 {
        let database = try SQLiteDatabase(path: path, readOnly: true)
        defer { database.close() }
        let count = try database.prepare("SELECT COUNT(*) FROM changes WHERE version BETWEEN 1 AND 3")
        defer { count.reset() }
        return try count.step() ? count.int64(0) : -1
    }

    @Test func aSchema3FileMadeByTheLastReleaseIsUpgradedKeepingItsVersionsTrashAndHangul() async throws {
        let directory = try TemporaryDirectory()
        let path = try copy(fixture: "schema-3.sqlite", in: directory)
        #expect(try Version1File.describe(path: path).version == 3)
        let store = try SQLiteStore(path: path)
        #expect(try Version1File.describe(path: path).version == 4)
        let memos = store.snapshot().memos
        #expect(memos.map(\.content) == [
            "edited memo, version 5\nwith a second line", "한글 메모: 안녕하세요, 세계", "plain memo, never edited",
        ])
        #expect(memos.map(\.revision) == [7, 2, 1])
        let hangul = try await store.history(id: memos[1].id, limit: 10).versions
        #expect(hangul.count == 1)
        #expect(hangul.first?.content.utf8.elementsEqual("한글 메모: 안녕하세요, 세계".utf8) == true)
        let edited = try await store.history(id: memos[0].id, limit: 10)
        #expect(edited.versions.map(\.revision) == [7, 6, 5, 4, 3])
        #expect(edited.versions.map(\.kind) == [.update, .update, .update, .update, .create])
        #expect(edited.versions.last?.content == "edited memo, version 1")
        #expect(edited.versions.allSatisfy { $0.author.name == "client" })
        let page = try await store.history(id: memos[0].id, limit: 2, before: 6)
        #expect(page.versions.map(\.revision) == [5, 4])
        #expect(page.more)
        let trash = try await store.trash(limit: 10).entries
        #expect(trash.map(\.memo.content) == ["deleted memo, second text"])
        #expect(trash.map(\.revision) == [10])
        let gone = try #require(trash.first).memo.id
        #expect(try await store.history(id: gone, limit: 10).versions.map(\.revision) == [9, 8])

        // The file goes on: an old version restored, the deleted memo brought back with its versions.
        let restored = try await store.restore(id: memos[0].id, revision: 4, author: alice)
        #expect(restored.content == "edited memo, version 2")
        let back = try await store.restore(id: gone, revision: nil, author: bob)
        #expect(back.content == "deleted memo, second text")
        #expect(try await store.history(id: gone, limit: 10).versions.map(\.revision) == [back.revision, 9, 8])
        #expect(try await store.trash(limit: 10).entries.isEmpty)
        store.close()

        // Opened again with fewer versions kept: every memo's chain is capped, and a version past K is gone.
        let capped = try SQLiteStore(path: path, versions: VersionPolicy(keep: 3, trashDays: 30))
        defer { capped.close() }
        #expect(try await capped.history(id: memos[0].id, limit: 10).versions.map(\.revision)
            == [restored.revision, 7, 6])
        await #expect(throws: MemoError.self) { try await capped.restore(id: memos[0].id, revision: 5) }
        #expect(try await capped.history(id: gone, limit: 10).versions.map(\.revision) == [back.revision, 9, 8])
        // 3 + 3 + 1 + 1 versions are left in the file.
        #expect(try versionRows(path: path) == 8)
    }

    /// With `--versions 0` nothing is kept, as in the memory store: also not the one version per memo that the
    /// upgrade from a file without versions (release 1.0.0's, schema 2) or a file's versions (schema 3) start.
    @Test(arguments: ["release-1.0.0.sqlite", "schema-3.sqlite"])
    func withVersionsOffAnUpgradedFileKeepsNoVersion(fixture: String) async throws {
        let directory = try TemporaryDirectory()
        let path = try copy(fixture: fixture, in: directory)
        let store = try SQLiteStore(path: path, versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { store.close() }
        #expect(store.snapshot().memos.count == 3)
        for memo in store.snapshot().memos {
            #expect(try await store.history(id: memo.id, limit: 10).versions.isEmpty)
        }
        let trash = try await store.trash(limit: 10).entries
        #expect(trash.count == 1)
        let gone = try #require(trash.first).memo.id
        #expect(try await store.history(id: gone, limit: 10).versions.isEmpty)
        #expect(try versionRows(path: path) == 0)
    }

    /// The versions past K stay marked only until a sweep (the history's trim, the purge pass, closing): then they
    /// are dropped in bulk, and the file holds K per memo.
    @Test func theVersionsPastKAreDroppedFromTheFileInBulk() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let store = try SQLiteStore(path: path, historyCapacity: 10, versions: VersionPolicy(keep: 3, trashDays: 30))
        let ids = [UUID(), UUID()]
        for id in ids { _ = try await store.perform(.create(id: id, content: "v0", insertMicros: nil)) }
        // 2,000 edits in batches (trims and sweeps come every 1,024 writes), then a few more after the last sweep.
        for round in 0..<2 {
            let done = Recorder<[Result<WriteOutcome, MemoError>]>()
            store.submit((0..<1000).map {
                WriteOp.update(id: ids[$0 % 2], content: "r\(round) \($0)", expectedRevision: nil)
            }) { done.record($0) }
            await done.wait(for: 1)
        }
        for id in ids { _ = try await store.perform(.update(id: id, content: "last", expectedRevision: nil)) }
        #expect(try await store.history(id: ids[0], limit: 10).versions.map(\.content) == ["last", "r1 998", "r1 996"])
        #expect(try await store.history(id: ids[1], limit: 10).versions.map(\.content) == ["last", "r1 999", "r1 997"])
        store.close()
        #expect(try versionRows(path: path) == 6)
    }
}
