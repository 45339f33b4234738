import Foundation
import MemoModel
import MemoPostgres
import MemoStore
import MemoTestSupport
import PostgresTestSupport
import Testing

/// A PostgreSQL store's start: the memos and the history streamed from the database (binary COPY) are what the
/// server that wrote them holds, byte for byte; a database it cannot follow is refused with a message.
@Suite("PostgreSQL store start-up load: streamed, byte for byte", .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresLoadTests {
    /// Contents whose bytes matter: NFC and NFD spellings, Hangul, control characters, one near the size limit.
    static let contents = [
        "plain", "메모 한글", "café", "cafe\u{301}", "tab\there\nnew line", "",
        String(repeating: "가", count: (MemoLimits.maxContentBytes - 16) / 3),
    ]

    @Test func aStartedStoreHoldsEveryMemoAndChangeAsTheWriterDid() async throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let writer = try PostgresStore(uri: cluster.uri(database), historyCapacity: 40)
        defer { writer.close() }
        var memos: [Memo] = []
        for round in 0..<4 {
            for content in Self.contents { memos.append(try await writer.createMemo(content: "\(round) \(content)")) }
        }
        for index in stride(from: 0, to: memos.count, by: 3) {
            memos[index] = try await writer.update(memo: memos[index], content: Self.contents[index % 7] + " edited")
        }
        for index in stride(from: 1, to: memos.count, by: 5) { try await writer.delete(memo: memos[index]) }
        let head = writer.revision

        let started = try PostgresStore(uri: cluster.uri(database), historyCapacity: 40)
        defer { started.close() }
        #expect(started.revision == head)
        let written = try #require(writer.memoList().value)
        let loaded = try #require(started.memoList().value)
        #expect(loaded.count == written.count)
        // Memo's == compares content as UTF-8 bytes: the NFD memo is not taken for the NFC one.
        #expect(loaded == written)
        // The history after the floor, change for change (kind, memo, revision), on both.
        let resumeFrom = head - 30
        let fromWriter = Recorder<WatchEvent>()
        writer.watch(from: .after(resumeFrom)) { fromWriter.record($0) }.cancel()
        let fromStarted = Recorder<WatchEvent>()
        started.watch(from: .after(resumeFrom)) { fromStarted.record($0) }.cancel()
        #expect(fromStarted.values.count == 31)
        #expect(fromStarted.values == fromWriter.values)
    }

    @Test func aStartedStoresMemosByOneAuthorShareOneAuthor() async throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let serial = String(repeating: "5A", count: 20)
        let writer = try PostgresStore(uri: cluster.uri(database))
        for index in 0..<8 {
            // Each made afresh, as each connection's certificate gives its own.
            let author = Author(name: index % 2 == 0 ? "alice" : "bob", serial: serial)
            _ = try await writer.perform(.create(id: UUID(), content: "\(index)", insertMicros: nil, author: author))
        }
        writer.close()
        let started = try PostgresStore(uri: cluster.uri(database))
        defer { started.close() }
        let memos = try #require(started.memoList().value).sorted { $0.revision < $1.revision }
        let alice = try #require(memos.first?.author)
        let bob = memos[1].author
        #expect(alice.name == "alice" && bob.name == "bob" && alice.serial == serial)
        #expect(memos.count == 8 && !alice.isShared(with: bob))
        #expect(memos.enumerated().allSatisfy { $0.element.author.isShared(with: $0.offset % 2 == 0 ? alice : bob) })
        // The history read after them shares them too.
        let changes = try started.changes(after: 0).changes
        #expect(changes.count == 8)
        #expect(changes.allSatisfy { $0.memo.author.isShared(with: $0.revision % 2 == 1 ? alice : bob) })
    }

    @Test func aGapInTheChangesTableFailsTheStartWithAStorageError() async throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let writer = try PostgresStore(uri: cluster.uri(database))
        for index in 0..<10 { _ = try await writer.createMemo(content: "memo \(index)") }
        writer.close()
        // A change the history must hold is missing (an operator's DELETE, a broken restore): the store used to
        // stop the process on a precondition; it refuses to start with a message instead.
        try cluster.sql("DELETE FROM memo_changes WHERE revision = 5", database: database)
        #expect {
            try PostgresStore(uri: cluster.uri(database))
        } throws: { error in
            "\(error)".contains("the changes table has no change 5")
        }
    }
}
