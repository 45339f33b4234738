import Foundation
import MemoModel
import MemoSQLite
import MemoStore
import MemoTestSupport
import Testing

@Suite("SQLite store: durability, reopening and group commit")
struct SQLiteStoreTests {
    @Test func reopeningRestoresEveryMemoTheRevisionCounterAndTheHistory() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/nested/folder/memos.sqlite"
        var store = try SQLiteStore(path: path)
        let kept = try await store.createMemo(content: "남는 메모\n두 줄")
        let edited = try await store.createMemo(content: "before")
        let gone = try await store.createMemo(content: "gone")
        let after = try await store.update(id: edited.id, content: "after", expectedRevision: nil)
        let deleted = try await store.delete(memo: gone)
        let imported = try await store.create(
            content: "imported", id: UUID(), insertDate: Date(unixMicros: 1_000_000))
        let listBefore = store.memoList().value
        store.close()

        store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(store.revision == 6)
        #expect(store.memoList().value == listBefore)
        #expect(store.memoList().value?.map(\.id) == [after.id, kept.id, imported.id])
        #expect(try await store.get(id: edited.id) == after)
        let events = Recorder<WatchEvent>()
        store.watch(from: .after(3)) { events.record($0) }.cancel()
        #expect(events.values == [
            .resumed(head: 6),
            .change(Change(revision: 4, kind: .updated, memo: after)),
            .change(Change(revision: 5, kind: .deleted, memo: deleted)),
            .change(Change(revision: 6, kind: .created, memo: imported)),
        ])
        let next = try await store.createMemo(content: "after reopen")
        #expect(next.revision == 7)
        // Rows written before the reopen are found again (their rowids come from the load) for edits and deletes.
        let keptEdited = try await store.update(id: kept.id, content: "kept, edited", expectedRevision: nil)
        _ = try await store.delete(id: imported.id, expectedRevision: nil)
        store.close()
        store = try SQLiteStore(path: path)
        #expect(store.memoList().value?.map(\.id) == [next.id, after.id, kept.id])
        #expect(try await store.get(id: kept.id) == keptEdited)
        let later = Recorder<WatchEvent>()
        store.watch(from: .after(7)) { later.record($0) }.cancel()
        #expect(later.values.count == 3)
        let edit = Change(revision: 8, kind: .updated, memo: keptEdited)
        #expect(later.values.dropLast() == [.resumed(head: 9), .change(edit)])
    }

    @Test func historyBeyondCapacityIsTrimmedButHeadSurvives() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        var store = try SQLiteStore(path: path, historyCapacity: 10)
        for i in 0..<1100 { _ = try await store.createMemo(content: "memo \(i)") }
        store.close()
        store = try SQLiteStore(path: path, historyCapacity: 10)
        defer { store.close() }
        #expect(store.revision == 1100)
        let events = Recorder<WatchEvent>()
        // Ten changes kept (1091...1100): resuming from 1090 works, from 1089 does not.
        store.watch(from: .after(1090)) { events.record($0) }.cancel()
        #expect(events.values.count == 11)
        #expect(events.values.first == .resumed(head: 1100))
        let gone = Recorder<WatchEvent>()
        store.watch(from: .after(1089)) { gone.record($0) }.cancel()
        #expect(gone.values == [.historyGone(requested: 1089, oldestAvailable: 1090)])
    }

    @Test func concurrentWritesShareTransactions() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path + "/memos.sqlite")
        defer { store.close() }
        let done = Recorder<Result<WriteOutcome, MemoError>>()
        // Fifty writers submit at once; the writer commits whatever is waiting in one transaction.
        for i in 0..<50 {
            store.submit(.create(id: UUID(), content: "writer \(i)", insertMicros: nil)) { done.record($0) }
        }
        await done.wait(for: 50)
        #expect(done.values.allSatisfy { if case .success = $0 { true } else { false } })
        #expect(store.revision == 50)
        #expect(store.transactionCount < 50)
    }

    @Test func aFailedWriteInABatchDoesNotStopTheOthers() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path + "/memos.sqlite")
        defer { store.close() }
        let id = UUID()
        let done = Recorder<Result<WriteOutcome, MemoError>>()
        store.submit(.create(id: id, content: "one", insertMicros: nil)) { done.record($0) }
        store.submit(.update(id: UUID(), content: "nobody", expectedRevision: nil)) { done.record($0) }
        store.submit(.update(id: id, content: "two", expectedRevision: 1)) { done.record($0) }
        await done.wait(for: 3)
        #expect(try await store.get(id: id).content == "two")
        #expect(done.values.filter { if case .failure(.notFound) = $0 { true } else { false } }.count == 1)
    }

    @Test func aFileThatIsNotADatabaseIsAClearError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteStore(path: path)
        } throws: { error in
            guard case MemoError.storage(let message) = error else { return false }
            return message.contains(path)
        }
    }
}
