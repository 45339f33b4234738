import Foundation
import MemoModel
import MemoPostgres
import MemoStore
import MemoTestSupport
import PostgresTestSupport
import Testing

@Suite("PostgreSQL: versions and trash in the database, the same on every server; a release 1.0.0 database upgraded",
       .enabled(if: postgresTestsEnabled))
struct PostgresVersionsTests {
    private let alice = Author(name: "alice", serial: "0A1B")
    private let bob = Author(name: "bob", serial: "2C3D")

    @Test func aDatabaseMadeByRelease100IsUpgradedKeepingEveryMemoAndStartingEachHistory() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        let dump = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-1.0.0-postgres.sql")
        try TestPostgres.run(postgres.binaries + "/psql", [
            "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(postgres.port), "-U", "memo",
            "-d", database, "-f", dump.path,
        ])
        #expect(try postgres.sql("SELECT version FROM memo_schema", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")

        let store = try PostgresStore(uri: postgres.uri(database))
        defer { store.close() }
        #expect(try postgres.sql("SELECT version FROM memo_schema", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        let memos = store.snapshot().memos
        #expect(memos.map(\.content) == [
            "edited memo, third text\nwith a second line", "한글 메모: 안녕하세요, 세계", "first memo, kept as it was",
        ])
        #expect(memos[1].content.utf8.elementsEqual("한글 메모: 안녕하세요, 세계".utf8))
        #expect(memos.map(\.revision) == [5, 2, 1])
        #expect(memos.allSatisfy { $0.author == .none })
        for memo in memos {
            let history = try await store.history(id: memo.id, limit: 10)
            #expect(history.versions.map(\.revision) == [memo.revision])
            #expect(history.versions.first?.content.utf8.elementsEqual(memo.content.utf8) == true)
            #expect(history.versions.first?.author == Author.none)
        }
        let trash = try await store.trash(limit: 10)
        #expect(trash.entries.map(\.memo.content) == ["deleted memo"])
        #expect(trash.entries.map(\.revision) == [7])
        // The upgraded database takes writes with authors; the history goes on from its first version.
        let edited = try await store.perform(.update(id: memos[1].id, content: "고침", expectedRevision: 2, author: alice))
        #expect(edited.revision == 8)
        #expect(try await store.history(id: edited.id, limit: 10).versions.map(\.author) == [alice, .none])
        let back = try await store.restore(id: trash.entries[0].memo.id, revision: nil, author: bob)
        #expect(back.content == "deleted memo")
    }

    @Test func twoServersOverOneDatabaseAnswerTheSameVersionsAndTrashAndRestoreEachOthersDeletes() async throws {
        let postgres = try TestPostgres.shared()
        let uri = postgres.uri(try postgres.makeDatabaseName())
        let first = try PostgresStore(uri: uri)
        defer { first.close() }
        let second = try PostgresStore(uri: uri)
        defer { second.close() }
        let id = UUID()
        let made = try await first.perform(.create(id: id, content: "one", insertMicros: nil, author: alice))
        let edited = try await second.perform(.update(id: id, content: "two", expectedRevision: made.revision,
                                                      author: bob))
        let onFirst = try await first.history(id: id, limit: 10)
        let onSecond = try await second.history(id: id, limit: 10)
        #expect(onFirst == onSecond)
        #expect(onFirst.versions.map(\.author) == [bob, alice])
        // The second server's change reached the first with its author.
        #expect(try await pollUntilAsync { (try? first.memo(id))?.author == bob })

        let deleted = try await first.perform(.delete(id: id, expectedRevision: edited.revision, author: alice))
        #expect(try await second.trash(limit: 10).entries.map(\.revision) == [deleted.revision])
        let back = try await second.restore(id: id, revision: made.revision, expectedRevision: deleted.revision,
                                            author: bob)
        #expect(back.content == "one")
        #expect(try await pollUntilAsync { (try? first.memo(id)) == back })
        #expect(try await first.trash(limit: 10).entries.isEmpty)
        #expect(try await first.history(id: id, limit: 10).versions.map(\.kind) == [.restore, .update, .create])
    }
}

/// Polls a condition with a deadline, between short pauses.
func pollUntilAsync(seconds: Double = 30, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
