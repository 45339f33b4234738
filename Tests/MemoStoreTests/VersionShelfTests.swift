import Foundation
import MemoModel
@testable import MemoStore
import MemoTestSupport
import StoreTestSupport
import Testing

/// One write's outcome, as two stores can be compared on it: the memo it answered with, or the error's words.
private enum Answer: Equatable, CustomStringConvertible {
    case memo(id: UUID, revision: UInt64, content: String, author: Author)
    case failed(String)

    init(_ result: Result<WriteOutcome, MemoError>) {
        switch result {
        case .success(let outcome):
            let memo = outcome.memo
            self = .memo(id: memo.id, revision: memo.revision, content: memo.content, author: memo.author)
        case .failure(let error):
            self = .failed(String(describing: error))
        }
    }

    var description: String {
        switch self {
        case .memo(let id, let revision, let content, let author):
            "memo \(id.uuidString.prefix(8)) r\(revision) \(content.debugDescription) by \(author)"
        case .failed(let error): "failed \(error)"
        }
    }
}

/// What a store's versions and trash read, without the dates (each store reads its own clock a different number of
/// times): per id, its versions newest first, or `notFound`; the trash newest first.
private struct Kept: Equatable {
    struct Version: Equatable {
        var revision: UInt64
        var kind: VersionKind
        var author: Author
        var content: [UInt8]
    }

    var histories: [[Version]?]
    var trash: [[String]]

    init(of store: any ServingStore, ids: [UUID]) async throws {
        histories = []
        for id in ids {
            do {
                let page = try await store.history(id: id, limit: 100)
                histories.append(page.versions.map {
                    Version(revision: $0.revision, kind: $0.kind, author: $0.author, content: Array($0.content.utf8))
                })
            } catch MemoError.notFound {
                histories.append(nil)
            }
        }
        trash = try await store.trash(limit: 100).entries.map {
            [$0.memo.id.uuidString, "\($0.revision)", $0.deletedBy.name, $0.memo.content, $0.memo.author.name]
        }
    }
}

@Suite("The memory store's version shelf: a memo's first version is its row until it changes")
struct VersionShelfTests {
    private let alice = Author(name: "alice", serial: "0A1B")
    private let bob = Author(name: "bob", serial: "2C3D")

    private func submit(_ store: MemoryStore, _ ops: [WriteOp]) async -> [Result<WriteOutcome, MemoError>] {
        await withCheckedContinuation { continuation in store.submit(ops) { continuation.resume(returning: $0) } }
    }

    @Test func aCreateKeepsNothingOnTheShelfAndAChangeMovesItsCreateVersionOntoIt() async throws {
        let store = MemoryStore()
        defer { store.close() }
        let ids = (0..<64).map { _ in UUID() }
        let made = await submit(store, ids.map { .create(id: $0, content: "memo", insertMicros: nil, author: alice) })
        let first = try made[0].get().memo
        #expect(store.storeState.shelvedVersions == 0)

        // The row reads as its create version, with its author and date.
        let page = try await store.history(id: first.id, limit: 10)
        #expect(page.versions == [MemoVersion(
            id: first.id, revision: first.revision, kind: .create, micros: first.updateMicros, author: alice,
            content: "memo")])

        let updated = try await store.perform(
            .update(id: first.id, content: "edited", expectedRevision: first.revision, author: bob))
        #expect(store.storeState.shelvedVersions == 2)
        let versions = try await store.history(id: first.id, limit: 10).versions
        #expect(versions.map(\.revision) == [updated.revision, first.revision])
        #expect(versions.map(\.kind) == [.update, .create])
        #expect(versions.map(\.author) == [bob, alice])
        #expect(versions.last?.micros == first.updateMicros)

        // A delete takes the create version to the trash with it.
        let second = try made[1].get().memo
        _ = try await store.perform(.delete(id: second.id, expectedRevision: nil, author: bob))
        #expect(store.storeState.shelvedVersions == 3)
        #expect(try await store.history(id: second.id, limit: 10).versions.map(\.kind) == [.create])
        #expect(try await store.history(id: second.id, limit: 10).versions.map(\.author) == [alice])
    }

    @Test func aNeverEditedMemoCanBeRestoredToItsCreateLiveAndFromTheTrash() async throws {
        let store = MemoryStore()
        defer { store.close() }
        let id = UUID()
        let made = try await store.perform(.create(id: id, content: "처음", insertMicros: nil, author: alice))
        let again = try await store.restore(id: id, revision: made.revision, author: bob)
        #expect(again.content.utf8.elementsEqual("처음".utf8))
        #expect(try await store.history(id: id, limit: 10).versions.map(\.kind) == [.restore, .create])

        let other = UUID()
        let once = try await store.perform(.create(id: other, content: "once", insertMicros: nil, author: alice))
        let gone = try await store.perform(.delete(id: other, expectedRevision: nil, author: bob))
        let back = try await store.restore(id: other, revision: once.revision, expectedRevision: gone.revision)
        #expect(back.content == "once")
        let versions = try await store.history(id: other, limit: 10).versions
        #expect(versions.map(\.revision) == [back.revision, once.revision])
        #expect(versions.map(\.kind) == [.restore, .create])
    }

    @Test func aMemoTheStoreOpenedWithHasNoVersionsUntilItChanges() async throws {
        let old = Memo(id: UUID(), content: "from before", insertMicros: 1_000, updateMicros: 2_000, revision: 7)
        let store = MemoryStore(memos: [old])
        defer { store.close() }
        #expect(try await store.history(id: old.id, limit: 10).versions.isEmpty)
        await #expect(throws: MemoError.versionNotFound(id: old.id, reason: WritePlanner.notKept(7))) {
            try await store.restore(id: old.id, revision: 7)
        }
        let made = try await store.perform(.create(id: UUID(), content: "new", insertMicros: nil))
        #expect(made.revision == 8)
        #expect(try await store.history(id: made.id, limit: 10).versions.map(\.kind) == [.create])
        let updated = try await store.perform(.update(id: old.id, content: "changed", expectedRevision: 7))
        #expect(try await store.history(id: old.id, limit: 10).versions.map(\.revision) == [updated.revision])
        _ = try await store.perform(.delete(id: old.id, expectedRevision: nil))
        #expect(try await store.history(id: old.id, limit: 10).versions.map(\.revision) == [updated.revision])
    }

    /// The same random batches of creates, updates (merging or not), deletes and restores over a few ids, on the
    /// memory store and on SQLite (which keeps every version as a row): every answer, every history and the trash
    /// read the same, for versions off, one kept, three kept, and no trash days.
    @Test(arguments: [VersionPolicy(keep: 0, trashDays: 30), VersionPolicy(keep: 1, trashDays: 30),
                      VersionPolicy(keep: 3, trashDays: 30), VersionPolicy(keep: 3, trashDays: 0)])
    func theMemoryStoreReadsAsSQLiteAfterTheSameRandomWrites(policy: VersionPolicy) async throws {
        let memory = MemoryStore(versions: policy)
        defer { memory.close() }
        let sqliteHandle = try StoreKind.sqlite.make(versions: policy)
        defer { sqliteHandle.store.close() }
        let sqlite = sqliteHandle.store
        var random = SeededGenerator(seed: 0x5E1F + UInt64(policy.keep * 10 + policy.trashDays))
        let ids = (0..<5).map { _ in UUID() }
        let authors = [alice, bob, .none]
        var seen: [UUID: [UInt64]] = [:]  // the revisions each id's writes answered with, for restores to name
        func op() -> WriteOp {
            let id = ids.randomElement(using: &random)!
            let author = authors.randomElement(using: &random)!
            let named = (seen[id] ?? []).randomElement(using: &random)
            let content = ["a", "b\nb", "씨", "a\nb\nc"].randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3: return .create(id: id, content: content, insertMicros: nil, author: author)
            case 3..<5: return .update(id: id, content: content, expectedRevision: nil, author: author)
            case 5: return .update(id: id, content: content + "\nz", expectedRevision: named, merge: true, author: author)
            case 6..<8: return .delete(id: id, expectedRevision: nil, author: author)
            case 8: return .restore(id: id, revision: named, expectedRevision: nil, author: author)
            default: return .restore(id: id, revision: nil, expectedRevision: nil, author: author)
            }
        }
        for batch in 0..<40 {
            let ops = (0..<Int.random(in: 1...4, using: &random)).map { _ in op() }
            let fromMemory = await submit(memory, ops).map(Answer.init)
            let fromSQLite = await withCheckedContinuation { continuation in
                sqlite.submit(ops) { continuation.resume(returning: $0) }
            }.map(Answer.init)
            #expect(fromMemory == fromSQLite, "batch \(batch): \(ops)")
            for case .memo(let id, let revision, _, _) in fromMemory { seen[id, default: []].append(revision) }
            if batch % 8 == 7 {
                let (a, b) = (try await Kept(of: memory, ids: ids), try await Kept(of: sqlite, ids: ids))
                #expect(a == b, "after batch \(batch)")
            }
        }
        #expect(try await Kept(of: memory, ids: ids) == Kept(of: sqlite, ids: ids))
        func rows(_ store: any ServingStore) -> [Answer] {
            store.snapshot().memos.map { Answer(.success(.existing($0))) }
        }
        #expect(rows(memory) == rows(sqlite))
    }
}
