import Foundation
import Synchronization
import MemoModel
@testable import MemoPostgres
import MemoStore
import MemoTestSupport
import PostgresTestSupport
import Testing

@Suite("PostgreSQL: versions and trash in the database, the same on every server; a release 1.0.0 database upgraded",
       .enabled(if: postgresTestsEnabled))
struct PostgresVersionsTests {
    private let alice = Author(name: "alice", serial: "0A1B")
    private let bob = Author(name: "bob", serial: "2C3D")

    /// A new database loaded from the dump of one made by release 1.0.0 (schema 1).
    private func release100Database(_ postgres: TestPostgres) throws -> String {
        let database = try postgres.makeDatabaseName()
        let dump = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-1.0.0-postgres.sql")
        try TestPostgres.run(postgres.binaries + "/psql", [
            "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(postgres.port), "-U", "memo",
            "-d", database, "-f", dump.path,
        ])
        #expect(try postgres.sql("SELECT version FROM memo_schema", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        return database
    }

    /// The rows of `memo_changes` marked as kept versions (not the trash's), of memo `id` when given.
    private func versionRows(_ postgres: TestPostgres, _ database: String, of id: UUID? = nil) throws -> Int {
        let memo = id.map { " AND id = '\($0.uuidString)'::uuid" } ?? ""
        return Int(try postgres.sql(
            "SELECT count(*) FROM memo_changes WHERE vkind BETWEEN 1 AND 3" + memo, database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func aDatabaseMadeByRelease100IsUpgradedKeepingEveryMemoAndStartingEachHistory() async throws {
        let postgres = try TestPostgres.shared()
        let database = try release100Database(postgres)

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

    /// With `--versions 0` nothing is kept, as in the memory store and SQLite: also not the one version per memo
    /// that the upgrade from release 1.0.0's schema starts. The trash stays (it is `--trash-days`'), without versions.
    @Test func withVersionsOffAnUpgradedDatabaseKeepsNoVersion() async throws {
        let postgres = try TestPostgres.shared()
        let database = try release100Database(postgres)
        let store = try PostgresStore(uri: postgres.uri(database), versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { store.close() }
        let memos = store.snapshot().memos
        #expect(memos.map(\.revision) == [5, 2, 1])
        for memo in memos {
            #expect(try await store.history(id: memo.id, limit: 10).versions.isEmpty)
        }
        let trash = try await store.trash(limit: 10).entries
        #expect(trash.map(\.memo.content) == ["deleted memo"])
        let gone = try #require(trash.first).memo.id
        #expect(try await store.history(id: gone, limit: 10).versions.isEmpty)
        #expect(try versionRows(postgres, database) == 0)
        // No version to restore; writes keep none either.
        await #expect(throws: MemoError.self) { try await store.restore(id: memos[0].id, revision: 5) }
        let edited = try await store.perform(.update(id: memos[1].id, content: "고침", expectedRevision: 2, author: alice))
        #expect(try await store.history(id: edited.id, limit: 10).versions.isEmpty)
        #expect(try versionRows(postgres, database) == 0)
        let back = try await store.restore(id: gone, revision: nil, author: bob)
        #expect(back.content == "deleted memo")
        #expect(try await store.history(id: gone, limit: 10).versions.isEmpty)
        await #expect(throws: MemoError.self) { try await store.history(id: UUID(), limit: 10) }
    }

    /// The drop when a server with `--versions 0` opens, before it serves (so that no restore or merge finds the
    /// upgrade's versions before its first purge pass): the upgrade marks one version per memo, the drop takes them
    /// all and leaves the trash.
    @Test func openingWithVersionsOffDropsTheVersionsTheUpgradeMarkedBeforeServing() throws {
        let postgres = try TestPostgres.shared()
        let database = try release100Database(postgres)
        let connection = try PostgresLink(uri: postgres.uri(database), role: "test", timeoutMillis: 30_000) { _ in }
            .open(listening: false)
        try PostgresSchema.ensure(on: connection, keepsVersions: true)
        #expect(try versionRows(postgres, database) == 3)
        try PostgresSchema.ensure(on: connection, keepsVersions: false)
        #expect(try versionRows(postgres, database) == 0)
        #expect(try postgres.sql("SELECT count(*) FROM memo_changes WHERE vkind = 4", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try postgres.sql("SELECT count(*) FROM memos", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "3")
    }

    /// Servers over one database with different `--versions`: one with 0 shows no version, also none another server
    /// keeps, and drops them with its purge pass (and when it opens).
    @Test func aServerWithVersionsOffShowsNoneAndDropsThoseAnotherServerKeptWithItsPurgePass() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        let keeping = try PostgresStore(uri: postgres.uri(database))
        defer { keeping.close() }
        // A memo in the trash tells when the off server's first purge pass (at its start) is done: with no trash
        // days, and its clock a second ahead, that pass purges it.
        let marker = try await keeping.perform(.create(id: UUID(), content: "marker", insertMicros: nil, author: alice))
        _ = try await keeping.perform(.delete(id: marker.id, expectedRevision: marker.revision, author: alice))
        let now = Mutex(Date().unixMicros + 1_000_000)
        let off = try PostgresStore(
            uri: postgres.uri(database), clock: { now.withLock { $0 } }, versions: VersionPolicy(keep: 0, trashDays: 0))
        defer { off.close() }
        #expect(try await pollUntilAsync { try await keeping.trash(limit: 10).entries.isEmpty })
        // The next pass is due in 60 s of real time, or when the off server's clock steps past the interval.
        let id = UUID()
        let made = try await keeping.perform(.create(id: id, content: "one", insertMicros: nil, author: alice))
        _ = try await keeping.perform(.update(id: id, content: "two", expectedRevision: made.revision, author: bob))
        #expect(try await keeping.history(id: id, limit: 10).versions.map(\.author) == [bob, alice])
        #expect(try await off.history(id: id, limit: 10).versions.isEmpty)
        #expect(try versionRows(postgres, database) == 2)
        now.withLock { $0 += Int64(PostgresStore.purgeIntervalSeconds + 1) * 1_000_000 }
        // A write wakes the off server's writer, which then runs the pass that fell due.
        _ = try await off.perform(.create(id: UUID(), content: "wake", insertMicros: nil, author: alice))
        #expect(try await pollUntilAsync { try versionRows(postgres, database) == 0 })
        #expect(try await keeping.history(id: id, limit: 10).versions.isEmpty)
    }

    /// Servers over one database with different `--versions`: in the up to 60 s between the off server's drops
    /// the other server's versions are in the database, and a restore sent to the off server answers as with no
    /// versions (not found), for a live memo and for a version of one in the trash; the trash itself stays.
    @Test func aRestoreSentToAServerWithVersionsOffFindsNoVersionAnotherServerKept() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        let keeping = try PostgresStore(uri: postgres.uri(database))
        defer { keeping.close() }
        let off = try PostgresStore(uri: postgres.uri(database), versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { off.close() }
        // The off server drops the versions when it opens and with its first purge pass, in its writer's first
        // turn: a second write of its own is taken in a later turn, so once it is answered that pass is done.
        for _ in 0..<2 { _ = try await off.perform(.create(id: UUID(), content: "wake", insertMicros: nil, author: bob)) }
        // Its next pass comes 60 s later, and may fall inside a round on a loaded machine: a round counts only when
        // the memo's versions are still in the database after its restores (nothing puts dropped ones back), else
        // it is made again with a new memo.
        var conclusive: (id: UUID, deleted: UInt64)?
        for _ in 0..<3 where conclusive == nil {
            let id = UUID()
            let made = try await keeping.perform(.create(id: id, content: "one", insertMicros: nil, author: alice))
            let edited = try await keeping.perform(
                .update(id: id, content: "two", expectedRevision: made.revision, author: bob))
            await expectVersionNotFound(id) {
                try await off.restore(id: id, revision: made.revision, expectedRevision: edited.revision, author: alice)
            }
            let deleted = try await keeping.perform(.delete(id: id, expectedRevision: nil, author: alice))
            await expectVersionNotFound(id) {
                try await off.restore(id: id, revision: made.revision, expectedRevision: deleted.revision, author: alice)
            }
            if try versionRows(postgres, database, of: id) == 2 { conclusive = (id, deleted.revision) }
        }
        let round = try #require(conclusive, "the off server dropped the versions inside every round")
        // The trash restore without a version works on the off server.
        let back = try await off.restore(id: round.id, revision: nil, expectedRevision: round.deleted, author: bob)
        #expect(back.content.utf8.elementsEqual("two".utf8))
    }

    /// Servers over one database with different `--versions`: a stale update that asks to be merged, sent to the
    /// off server while the other server's versions are still in the database, finds no base and stays the
    /// conflict it is on SQLite with K = 0; the same update sent to the keeping server merges against that base.
    @Test func aMergeSentToAServerWithVersionsOffFindsNoBaseAnotherServerKept() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        let keeping = try PostgresStore(uri: postgres.uri(database))
        defer { keeping.close() }
        let off = try PostgresStore(uri: postgres.uri(database), versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { off.close() }
        // As in the restore test above: the off server's first purge pass is done once its second write is
        // answered, and a round counts only when the base is still in the database after it (the keeping server
        // merges against it).
        for _ in 0..<2 {
            _ = try await off.perform(.create(id: UUID(), content: "wake", insertMicros: nil, author: bob))
        }
        var conclusive = false
        for _ in 0..<3 where !conclusive {
            let id = UUID()
            let made = try await keeping.perform(
                .create(id: id, content: "a\nb\nc\nd\n", insertMicros: nil, author: alice))
            let theirs = try await keeping.perform(
                .update(id: id, content: "A\nb\nc\nd\n", expectedRevision: made.revision, author: alice))
            let stale = WriteOp.update(
                id: id, content: "a\nb\nc\nD\n", expectedRevision: made.revision, merge: true, author: bob)
            await #expect(throws: MemoError.conflict(id: id, expected: made.revision, actual: theirs.revision)) {
                _ = try await off.perform(stale)
            }
            guard let merged = try? await keeping.perform(stale) else { continue }
            #expect(merged.content.utf8.elementsEqual("A\nb\nc\nD\n".utf8))
            conclusive = true
        }
        #expect(conclusive, "the off server dropped the versions inside every round")
    }

    /// A server started with a smaller `--versions` than the one before: the database still marks the old K of a
    /// memo until it is next written, and `log` shows (and a restore finds) only the newest K, as SQLite does
    /// from its open on; the next write caps the memo at K.
    @Test func aServerStartedWithASmallerKShowsAndRestoresOnlyTheNewestKVersions() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        let id = UUID()
        var revisions: [UInt64] = []
        do {
            let before = try PostgresStore(uri: postgres.uri(database), versions: VersionPolicy(keep: 5, trashDays: 30))
            defer { before.close() }
            var memo = try await before.perform(.create(id: id, content: "v1", insertMicros: nil, author: alice))
            revisions.append(memo.revision)
            for text in ["v2", "v3", "v4"] {
                memo = try await before.perform(
                    .update(id: id, content: text, expectedRevision: memo.revision, author: alice))
                revisions.append(memo.revision)
            }
        }
        let after = try PostgresStore(uri: postgres.uri(database), versions: VersionPolicy(keep: 2, trashDays: 30))
        defer { after.close() }
        #expect(try versionRows(postgres, database) == 4)
        let page = try await after.history(id: id, limit: 10)
        #expect(page.versions.map(\.revision) == [revisions[3], revisions[2]])
        #expect(page.versions.map(\.content) == ["v4", "v3"])
        #expect(!page.more)
        let first = try await after.history(id: id, limit: 1)
        #expect(first.versions.map(\.revision) == [revisions[3]])
        #expect(first.more)
        let older = try await after.history(id: id, limit: 10, before: revisions[3])
        #expect(older.versions.map(\.revision) == [revisions[2]])
        #expect(!older.more)
        #expect(try await after.history(id: id, limit: 10, before: revisions[2]).versions.isEmpty)
        await expectVersionNotFound(id) {
            try await after.restore(id: id, revision: revisions[1], expectedRevision: revisions[3], author: bob)
        }
        let restored = try await after.restore(id: id, revision: revisions[2], expectedRevision: revisions[3], author: bob)
        #expect(restored.content.utf8.elementsEqual("v3".utf8))
        #expect(try await after.history(id: id, limit: 10).versions.map(\.revision) == [restored.revision, revisions[3]])
        #expect(try versionRows(postgres, database) == 2)
    }

    /// A restore that must fail as not found because the version is not kept (by this server).
    private func expectVersionNotFound(
        _ id: UUID, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Memo
    ) async {
        do {
            let memo = try await body()
            Issue.record("restored \(memo.content) at revision \(memo.revision)", sourceLocation: sourceLocation)
        } catch let error as MemoError {
            guard case .versionNotFound(let failed, let reason) = error else {
                Issue.record("failed with \(error), not version-not-found", sourceLocation: sourceLocation)
                return
            }
            #expect(failed == id, sourceLocation: sourceLocation)
            #expect(reason.hasPrefix("version "), sourceLocation: sourceLocation)
        } catch {
            Issue.record("failed with \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func authorsWithQuotesBackslashesCommasBracesOrNothingAreStoredAsTheyAre() async throws {
        // The batch sends the authors as text array literals: each element is quoted, with backslashes and quotes
        // escaped, so that an empty name is not NULL and a comma or a brace is not a separator.
        let postgres = try TestPostgres.shared()
        let store = try PostgresStore(uri: postgres.uri(try postgres.makeDatabaseName()))
        defer { store.close() }
        let authors = [
            Author(name: "", serial: ""), Author(name: "a\"b", serial: "c\\d"), Author(name: "NULL", serial: "{x,y}"),
            Author(name: "\\\"", serial: "가 é, \u{1F600}"), Author(name: "plain", serial: "0A"),
        ]
        for author in authors {
            let made = try await store.perform(.create(id: UUID(), content: "by", insertMicros: nil, author: author))
            #expect(made.author == author)
            let kept = try await store.history(id: made.id, limit: 10).versions.first?.author
            #expect(kept == author)
        }
    }

    @Test func versionsAndTrashEntriesNotYetClaimedDurableAreNotShown() async throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        // The feed looks for commits left unclaimed once per recheck interval and claims one it sees twice (a write
        // given up, a server gone): a minute keeps that from claiming this one while the test looks.
        let store = try PostgresStore(uri: postgres.uri(database), recheckMillis: 60_000)
        defer { store.close() }
        let made = try await store.perform(.create(id: UUID(), content: "one", insertMicros: nil, author: alice))
        // Another server's batch as it is between its commit (without waiting for the flush) and its durable claim:
        // an update and a delete into the trash, both committed, neither claimed.
        let trashed = UUID()
        _ = try postgres.sql("""
            BEGIN;
            UPDATE memo_head SET revision = revision + 2 WHERE one;
            INSERT INTO memo_changes (revision, kind, id, content, insert_micros, update_micros, author_name,
                author_serial, vkind)
            SELECT h.revision - 1, 2, '\(made.id.uuidString)'::uuid, convert_to('two', 'UTF8'), 1, 2, 'bob', '2C3D', 2
                FROM memo_head h WHERE h.one
            UNION ALL SELECT h.revision, 3, '\(trashed.uuidString)'::uuid, convert_to('gone', 'UTF8'), 1, 3, 'bob',
                '2C3D', 4 FROM memo_head h WHERE h.one;
            COMMIT;
            """, database: database)
        #expect(try await store.history(id: made.id, limit: 10).versions.map(\.revision) == [made.revision])
        #expect(try await store.trash(limit: 10).entries.isEmpty)
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
