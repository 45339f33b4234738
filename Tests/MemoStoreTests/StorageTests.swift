import Foundation
import MemoModel
import MemoSQLite
import MemoTestSupport
import StoreTestSupport
import Testing

@Suite("Storage: the same behaviour from the memory, SQLite and PostgreSQL stores")
struct StorageTests {
    @Test(arguments: StoreKind.allCases)
    func createdMemosListNewestFirstAndCanBeRead(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let first = try await store.createMemo(content: "첫 번째 메모")
        let second = try await store.createMemo(content: "second\nwith two lines")
        let third = try await store.createMemo(content: "세 번째 🎉")
        #expect(store.memoList().value?.map(\.id) == [third.id, second.id, first.id])
        #expect(try await store.get(id: second.id) == second)
        #expect([first.revision, second.revision, third.revision] == [1, 2, 3])
        #expect(first.insertMicros < second.insertMicros && second.insertMicros < third.insertMicros)
        #expect(store.revision == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func createWithTheSameIdAndContentReturnsTheExistingMemo(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let id = UUID()
        let made = try await handle.store.create(content: "once", id: id, insertDate: nil)
        let again = try await handle.store.create(content: "once", id: id, insertDate: nil)
        #expect(again == made)
        #expect(handle.store.revision == 1)
        await #expect(throws: MemoError.conflict(id: id, expected: nil, actual: 1)) {
            try await handle.store.create(content: "other", id: id, insertDate: nil)
        }
        #expect(handle.store.memoList().value?.count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func updateKeepsIdentityInsertDateAndPosition(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let old = try await store.createMemo(content: "old")
        let middle = try await store.createMemo(content: "middle")
        let new = try await store.createMemo(content: "new")
        let updated = try await store.update(id: middle.id, content: "수정됨", expectedRevision: middle.revision)
        #expect(updated.id == middle.id)
        #expect(updated.insertMicros == middle.insertMicros)
        #expect(updated.updateMicros >= middle.updateMicros)
        #expect(updated.revision == 4)
        #expect(updated.content == "수정됨")
        #expect(store.memoList().value?.map(\.id) == [new.id, middle.id, old.id])
        #expect(try await store.get(id: middle.id) == updated)
    }

    @Test(arguments: StoreKind.allCases)
    func staleExpectedRevisionIsAConflictAndChangesNothing(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let memo = try await store.createMemo(content: "v1")
        _ = try await store.update(id: memo.id, content: "v2", expectedRevision: 1)
        await #expect(throws: MemoError.conflict(id: memo.id, expected: 1, actual: 2)) {
            try await store.update(id: memo.id, content: "v3", expectedRevision: 1)
        }
        await #expect(throws: MemoError.conflict(id: memo.id, expected: 1, actual: 2)) {
            try await store.delete(id: memo.id, expectedRevision: 1)
        }
        #expect(try await store.get(id: memo.id).content == "v2")
        #expect(store.revision == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func deletingAMissingMemoIsNotFound(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let memo = try await store.createMemo(content: "short-lived")
        let deleted = try await store.delete(id: memo.id, expectedRevision: memo.revision)
        #expect(deleted.id == memo.id && deleted.revision == 2 && deleted.content == "short-lived")
        await #expect(throws: MemoError.notFound(memo.id)) { try await store.delete(memo: memo) }
        await #expect(throws: MemoError.notFound(memo.id)) { try await store.get(id: memo.id) }
        await #expect(throws: MemoError.notFound(memo.id)) {
            try await store.update(id: memo.id, content: "x", expectedRevision: nil)
        }
        #expect(store.memoList().value == [])
    }

    @Test(arguments: StoreKind.allCases)
    func contentIsLimitedTo64KiB(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let limit = MemoLimits.maxContentBytes
        let exact = String(repeating: "a", count: limit - 3) + "한"  // a 3-byte scalar ends exactly at the limit
        let made = try await handle.store.createMemo(content: exact)
        #expect(made.content.utf8.count == limit)
        await #expect(throws: MemoError.contentTooLarge(size: limit + 1, limit: limit)) {
            try await handle.store.createMemo(content: exact + "b")
        }
        await #expect(throws: MemoError.contentTooLarge(size: limit + 1, limit: limit)) {
            try await handle.store.update(id: made.id, content: exact + "b", expectedRevision: nil)
        }
        #expect(handle.store.revision == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func listSubjectReplaysTheCurrentListThenEveryChange(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let a = try await store.createMemo(content: "a")
        let recorder = Recorder<[Memo]>()
        let subscription = store.memoList().subscribe { recorder.record($0) }
        defer { subscription.cancel() }
        let b = try await store.createMemo(content: "b")
        let b2 = try await store.update(id: b.id, content: "b2", expectedRevision: nil)
        try await store.delete(memo: a)
        await recorder.wait(for: 4)
        #expect(recorder.values.map { $0.map(\.content) } == [["a"], ["b", "a"], ["b2", "a"], ["b2"]])
        #expect(recorder.values.last == [b2])
    }

    @Test(arguments: StoreKind.allCases)
    func watchFromSnapshotThenEveryChangeInRevisionOrder(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let a = try await store.createMemo(content: "a")
        let recorder = Recorder<WatchEvent>()
        let watch = store.watch(from: .snapshot) { recorder.record($0) }
        defer { watch.cancel() }
        let b = try await store.createMemo(content: "b")
        let a2 = try await store.update(id: a.id, content: "a2", expectedRevision: 1)
        let gone = try await store.delete(id: b.id, expectedRevision: nil)
        await recorder.wait(for: 4)
        #expect(recorder.values == [
            .snapshot(revision: 1, memos: [a]),
            .change(Change(revision: 2, kind: .created, memo: b)),
            .change(Change(revision: 3, kind: .updated, memo: a2)),
            .change(Change(revision: 4, kind: .deleted, memo: gone)),
        ])
    }

    @Test(arguments: StoreKind.allCases)
    func watchAfterARevisionGetsTheMissedChangesOrHistoryGone(kind: StoreKind) async throws {
        let handle = try kind.make(historyCapacity: 3)
        defer { handle.store.close() }
        let store = handle.store
        var made: [Memo] = []
        for i in 1...5 { made.append(try await store.createMemo(content: "m\(i)")) }

        let resumed = Recorder<WatchEvent>()
        let watch = store.watch(from: .after(3)) { resumed.record($0) }
        defer { watch.cancel() }
        let sixth = try await store.createMemo(content: "m6")
        await resumed.wait(for: 4)
        #expect(resumed.values == [
            .resumed(head: 5),
            .change(Change(revision: 4, kind: .created, memo: made[3])),
            .change(Change(revision: 5, kind: .created, memo: made[4])),
            .change(Change(revision: 6, kind: .created, memo: sixth)),
        ])

        let upToDate = Recorder<WatchEvent>()
        store.watch(from: .after(6)) { upToDate.record($0) }.cancel()
        #expect(upToDate.values == [.resumed(head: 6)])

        let tooOld = Recorder<WatchEvent>()
        store.watch(from: .after(2)) { tooOld.record($0) }.cancel()
        #expect(tooOld.values == [.historyGone(requested: 2, oldestAvailable: 3)])

        let future = Recorder<WatchEvent>()
        store.watch(from: .after(99)) { future.record($0) }.cancel()
        #expect(future.values == [.historyGone(requested: 99, oldestAvailable: 3)])
    }

    /// What a resumed subscription's catch-up reads as the peer takes it (`ChangeStream`): a few changes at a time,
    /// with the head; only the head, to check a revision can be resumed from.
    @Test(arguments: StoreKind.allCases)
    func changesAfterARevisionComeAllOrTheFirstFewWithTheHead(kind: StoreKind) async throws {
        let handle = try kind.make(historyCapacity: 3)
        defer { handle.store.close() }
        let store = handle.store
        for i in 1...5 { _ = try await store.createMemo(content: "m\(i)") }
        #expect(try store.changes(after: 2).changes.map(\.revision) == [3, 4, 5])
        let first = try store.changes(after: 2, limit: 2)
        #expect(first.head == 5 && first.changes.map(\.revision) == [3, 4])
        let headOnly = try store.changes(after: 2, limit: 0)
        #expect(headOnly.head == 5 && headOnly.changes.isEmpty)
        #expect(try store.changes(after: 4, limit: 10).changes.map(\.revision) == [5])
        #expect(try store.changes(after: 5, limit: 10).changes.isEmpty)
        #expect(throws: MemoError.historyGone(requested: 1, oldestAvailable: 2)) {
            try store.changes(after: 1, limit: 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentWritersGetContiguousUniqueRevisions(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let memos = try await withThrowingTaskGroup(of: Memo.self) { group in
            for i in 0..<50 { group.addTask { try await store.createMemo(content: "writer \(i)") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(memos.map(\.revision)) == Set(1...50))
        #expect(store.memoList().value?.count == 50)
    }

    @Test(arguments: StoreKind.allCases)
    func aCreateKeepsBothGivenDatesAndRefusesAnUpdateDateBeforeTheInsertDate(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let kept = try await store.perform(.create(id: UUID(), content: "imported", insertMicros: 1_000,
                                                   updateMicros: 61_000_000))
        #expect(kept.insertMicros == 1_000 && kept.updateMicros == 61_000_000 && kept.revision == 1)
        await #expect(throws: MemoError.invalidArgument(
            "the update date 1970-01-01T00:00:00.000005Z is before the insert date 1970-01-01T00:00:00.001000Z")) {
            try await store.perform(.create(id: UUID(), content: "bad", insertMicros: 1_000, updateMicros: 5))
        }
        // The refused create consumed no revision.
        #expect(try await store.createMemo(content: "next").revision == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func closedStoreRefusesWork(kind: StoreKind) async throws {
        let handle = try kind.make()
        handle.store.close()
        await #expect(throws: MemoError.closed) { try await handle.store.createMemo(content: "late") }
    }
}
