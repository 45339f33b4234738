import Foundation
import MemoModel
import MemoStore
import MemoTestSupport
import StoreTestSupport
import Synchronization
import Testing

/// A stale update with `merge` (issue 29): merged line by line against the version it started from, in every store.
@Suite("Stale updates merged like git merges: the same from the memory, SQLite and PostgreSQL stores")
struct StaleUpdateMergeTests {
    private let dana = Author(name: "dana", serial: "0D")
    private let erin = Author(name: "erin", serial: "0E")

    @Test(arguments: StoreKind.allCases)
    func editsOfDifferentLinesMergeIntoAnOrdinaryUpdateByTheUpdaterWithBothEditsKept(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(
            .create(id: id, content: "title\none\ntwo\nthree\n", insertMicros: nil, author: dana))
        let theirs = try await store.perform(
            .update(id: id, content: "title\nONE\ntwo\nthree\n", expectedRevision: base.revision, author: dana))
        let seen = Mutex<[Change]>([])
        let watch = store.observeChanges { change in seen.withLock { $0.append(change) } }
        defer { watch.cancel() }

        let merged = try await store.perform(
            .update(
                id: id, content: "title\none\ntwo\nTHREE\n", expectedRevision: base.revision, merge: true,
                author: erin))
        #expect(Array(merged.content.utf8) == Array("title\nONE\ntwo\nTHREE\n".utf8))
        #expect(merged.revision > theirs.revision)
        #expect(merged.author == erin)
        #expect(merged.insertMicros == base.insertMicros)
        #expect(try store.memo(id) == merged)
        let versions = try await store.history(id: id, limit: 10).versions
        #expect(versions.map(\.revision) == [merged.revision, theirs.revision, base.revision])
        #expect(versions.map(\.author) == [erin, dana, dana])
        #expect(versions.first?.kind == .update)
        #expect(pollUntil { seen.withLock { $0.contains { $0.revision == merged.revision } } })
        #expect(seen.withLock { $0.first { $0.revision == merged.revision } }?.kind == .updated)
    }

    @Test(arguments: StoreKind.allCases)
    func overlappingEditsStillConflictAndChangeNothing(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(.create(id: id, content: "a\nb\nc\n", insertMicros: nil))
        let theirs = try await store.perform(.update(id: id, content: "a\nB\nc\n", expectedRevision: base.revision))
        // The same line, and the line next to it (git's rule: adjacent edits conflict).
        for ours in ["a\nmine\nc\n", "a\nb\nC\n"] {
            await #expect(throws: MemoError.conflict(id: id, expected: base.revision, actual: theirs.revision)) {
                _ = try await store.perform(
                    .update(id: id, content: ours, expectedRevision: base.revision, merge: true, author: erin))
            }
        }
        #expect(try store.memo(id) == theirs)
        #expect(store.revision == theirs.revision)
    }

    @Test(arguments: StoreKind.allCases)
    func withoutTheMergeFlagAStaleUpdateIsTheConflictItAlwaysWas(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(.create(id: id, content: "a\nb\nc\nd\n", insertMicros: nil))
        let theirs = try await store.perform(.update(id: id, content: "A\nb\nc\nd\n", expectedRevision: base.revision))
        await #expect(throws: MemoError.conflict(id: id, expected: base.revision, actual: theirs.revision)) {
            _ = try await store.perform(.update(id: id, content: "a\nb\nc\nD\n", expectedRevision: base.revision))
        }
        #expect(try store.memo(id) == theirs)
    }

    @Test(arguments: StoreKind.allCases)
    func aBaseNoLongerKeptIsAConflict(kind: StoreKind) async throws {
        // Versions off: nothing to merge against.
        let off = try kind.make(versions: VersionPolicy(keep: 0, trashDays: 30))
        defer { off.store.close() }
        let id = UUID()
        let base = try await off.store.perform(.create(id: id, content: "a\nb\nc\nd\n", insertMicros: nil))
        let theirs = try await off.store.perform(
            .update(id: id, content: "A\nb\nc\nd\n", expectedRevision: base.revision))
        await #expect(throws: MemoError.conflict(id: id, expected: base.revision, actual: theirs.revision)) {
            _ = try await off.store.perform(
                .update(id: id, content: "a\nb\nc\nD\n", expectedRevision: base.revision, merge: true))
        }

        // Two versions kept: the base is pruned after two more edits.
        let two = try kind.make(versions: VersionPolicy(keep: 2, trashDays: 30))
        defer { two.store.close() }
        let other = UUID()
        let first = try await two.store.perform(.create(id: other, content: "a\nb\nc\nd\n", insertMicros: nil))
        _ = try await two.store.perform(.update(id: other, content: "A\nb\nc\nd\n", expectedRevision: nil))
        let last = try await two.store.perform(.update(id: other, content: "A\nB\nc\nd\n", expectedRevision: nil))
        await #expect(throws: MemoError.conflict(id: other, expected: first.revision, actual: last.revision)) {
            _ = try await two.store.perform(
                .update(id: other, content: "a\nb\nc\nD\n", expectedRevision: first.revision, merge: true))
        }
        #expect(try two.store.memo(other) == last)
        // One edit back is still kept: that stale update merges.
        let merged = try await two.store.perform(
            .update(id: other, content: "A\nb\nc\nD\n", expectedRevision: last.revision - 1, merge: true))
        #expect(merged.content == "A\nB\nc\nD\n")
    }

    @Test(arguments: StoreKind.allCases)
    func aMergeOverTheContentLimitIsAConflict(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let big = String(repeating: "x", count: 40_000) + "\n"
        let base = try await store.perform(.create(id: id, content: "top\nmiddle\nbottom\n", insertMicros: nil))
        let theirs = try await store.perform(
            .update(id: id, content: big + "top\nmiddle\nbottom\n", expectedRevision: base.revision))
        await #expect(throws: MemoError.conflict(id: id, expected: base.revision, actual: theirs.revision)) {
            _ = try await store.perform(
                .update(id: id, content: "top\nmiddle\nbottom\n" + big, expectedRevision: base.revision, merge: true))
        }
        #expect(try store.memo(id) == theirs)
    }

    @Test(arguments: StoreKind.allCases)
    func linesAreComparedAsBytesSoAnNFDEditIsKeptAsWrittenAndConflictsWithAnNFCOne(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(.create(id: id, content: "메모\n원래\n\n끝\n", insertMicros: nil))
        let nfd = "메모\n\u{1100}\u{1161}\n\n끝\n"
        let theirs = try await store.perform(.update(id: id, content: nfd, expectedRevision: base.revision))
        // The same line in NFC: other bytes, another edit of that line.
        await #expect(throws: MemoError.conflict(id: id, expected: base.revision, actual: theirs.revision)) {
            _ = try await store.perform(
                .update(id: id, content: "메모\n\u{AC00}\n\n끝\n", expectedRevision: base.revision, merge: true))
        }
        // Another line: merged, their NFD bytes kept as they are.
        let merged = try await store.perform(
            .update(id: id, content: "메모\n원래\n\n마지막\n", expectedRevision: base.revision, merge: true))
        #expect(Array(merged.content.utf8) == Array("메모\n\u{1100}\u{1161}\n\n마지막\n".utf8))
    }

    @Test(arguments: StoreKind.allCases)
    func aStaleUpdateAlreadyDoneChangesNothingAndAnswersTheMemoAsItIs(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(.create(id: id, content: "a\nb\nc\n", insertMicros: nil, author: dana))
        let ours = WriteOp.update(id: id, content: "a\nb\nC\n", expectedRevision: base.revision, merge: true, author: erin)
        let done = try await store.perform(ours)
        // Sent again (its answer was lost): the memo already holds it; no new revision.
        let again = try await store.perform(ours)
        #expect(again == done)
        #expect(store.revision == done.revision)
        // The same edit made by someone else meanwhile: taken once, nothing written.
        let other = UUID()
        let first = try await store.perform(.create(id: other, content: "1\n2\n3\n", insertMicros: nil))
        let theirs = try await store.perform(.update(id: other, content: "1\nzwei\n3\n", expectedRevision: nil))
        let same = try await store.perform(
            .update(id: other, content: "1\nzwei\n3\n", expectedRevision: first.revision, merge: true, author: erin))
        #expect(same == theirs)
        #expect(store.revision == theirs.revision)
    }

    @Test(arguments: StoreKind.allCases)
    func aStaleUpdateMergesAgainstAnUpdateEarlierInTheSameBatch(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let base = try await store.perform(.create(id: id, content: "1\n2\n3\n4\n5\n", insertMicros: nil))
        let results = await withCheckedContinuation { continuation in
            store.submit([
                .update(id: id, content: "one\n2\n3\n4\n5\n", expectedRevision: base.revision, author: dana),
                .update(id: id, content: "1\n2\n3\n4\nfive\n", expectedRevision: base.revision, merge: true, author: erin),
            ]) { continuation.resume(returning: $0) }
        }
        guard case .success(.change(let first)) = results[0], case .success(.change(let second)) = results[1] else {
            Issue.record("both writes should succeed: \(results)")
            return
        }
        #expect(second.revision == first.revision + 1)
        #expect(Array(second.memo.content.utf8) == Array("one\n2\n3\n4\nfive\n".utf8))
        #expect(second.memo.author == erin)
        #expect(try store.memo(id).content == "one\n2\n3\n4\nfive\n")
    }
}
