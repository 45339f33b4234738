import Foundation
import MemoClient
import MemoModel
import MemoStore
import MemoTestSupport
import Synchronization
import Testing

/// Position edits (`ListDelta`) applied to a plain array give the same list as rebuilding it whole, for the
/// stores' list (StoreState) and the client's mirror with its pending writes, on random operation sequences.
@Suite("List position edits: applying them equals rebuilding the list")
struct ListDeltaTests {
    /// Applies `delta` to `list` the way a watcher must: a reset replaces, edits go in order at their positions.
    static func apply(_ delta: ListDelta, to list: inout [Memo]) {
        switch delta {
        case .reset(let memos): list = memos
        case .edits(let edits):
            for edit in edits {
                switch edit {
                case .insert(let memo, let at): list.insert(memo, at: at)
                case .update(let memo, let at):
                    #expect(list[at].id == memo.id, "an update names the memo at its position")
                    list[at] = memo
                case .remove(let memo, let at):
                    #expect(list[at].id == memo.id, "a removal names the memo at its position")
                    list.remove(at: at)
                }
            }
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func theStoresEditsFollowItsListThroughRandomWrites(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let store = MemoryStore()
        defer { store.close() }
        let followed = Followed()
        let watch = store.watchList { delta in followed.list.withLock { Self.apply(delta, to: &$0) } }
        defer { watch.cancel() }
        var ids: [UUID] = []
        for step in 0..<300 {
            switch random.next() % 4 {
            case 0, 1:
                // Insert dates spread over the past, so that creates land in the middle of the list too.
                let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(random.next() % 1000))
                ids.append(try await store.create(content: "memo \(step)", id: nil, insertDate: date).id)
            case 2 where !ids.isEmpty:
                let id = ids[Int(random.next() % UInt64(ids.count))]
                _ = try await store.update(id: id, content: "edited \(step)", expectedRevision: nil)
            case 3 where !ids.isEmpty:
                let id = ids.remove(at: Int(random.next() % UInt64(ids.count)))
                _ = try await store.delete(id: id, expectedRevision: nil)
            default:
                break
            }
            #expect(followed.list.withLock { $0 } == store.snapshot().memos, "step \(step)")
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func theMirrorsEditsFollowItsListWithPendingWrites(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var mirror = Mirror()
        var followed: [Memo] = []
        var server: [UUID: Memo] = [:]
        var revision: UInt64 = 0
        var tokens: [(UInt64, UUID)] = []
        func memo(_ id: UUID, _ text: String, insert: Int64) -> Memo {
            Memo(id: id, content: text, insertMicros: insert, updateMicros: insert, revision: revision)
        }
        let initial = (0..<20).map { index -> Memo in
            revision += 1
            return memo(UUID(), "base \(index)", insert: Int64(random.next() % 1000))
        }
        for memo in initial { server[memo.id] = memo }
        let (_, first) = mirror.applyShowing([.snapshot(revision: revision, last: true, memos: initial)])
        Self.apply(try #require(first), to: &followed)
        for step in 0..<400 {
            var delta: ListDelta?
            switch random.next() % 7 {
            case 0, 1:
                // A change from the server, to a random memo or a new one.
                revision += 1
                let ids = Array(server.keys).sorted { $0.uuidString < $1.uuidString }
                let change: Change
                if ids.isEmpty || random.next() % 3 == 0 {
                    let made = memo(UUID(), "made \(step)", insert: Int64(random.next() % 1000))
                    server[made.id] = made
                    change = Change(revision: revision, kind: .created, memo: made)
                } else if random.next() % 2 == 0 {
                    var edited = server[ids[Int(random.next() % UInt64(ids.count))]]!
                    edited.content = "edited \(step)"
                    edited.revision = revision
                    server[edited.id] = edited
                    change = Change(revision: revision, kind: .updated, memo: edited)
                } else {
                    var gone = server.removeValue(forKey: ids[Int(random.next() % UInt64(ids.count))])!
                    gone.revision = revision
                    change = Change(revision: revision, kind: .deleted, memo: gone)
                }
                delta = mirror.applyShowing([.change(change)]).delta
            case 2:
                // A local create, shown before the server has it (with this client's own insert date).
                let shown = memo(UUID(), "local \(step)", insert: Int64(random.next() % 1000))
                let (token, edits) = mirror.changeShowing(shown.id) { $0.addPending(.create(shown)) }
                tokens.append((token, shown.id))
                delta = edits
            case 3:
                // A local edit or delete of a memo on screen.
                guard !followed.isEmpty else { continue }
                var target = followed[Int(random.next() % UInt64(followed.count))]
                let write: PendingWrite
                if random.next() % 2 == 0 {
                    target.content = "local edit \(step)"
                    write = .update(target)
                } else {
                    write = .delete(target)
                }
                let (token, edits) = mirror.changeShowing(target.id) { $0.addPending(write) }
                tokens.append((token, target.id))
                delta = edits
            case 4 where !tokens.isEmpty:
                let (token, id) = tokens.remove(at: Int(random.next() % UInt64(tokens.count)))
                delta = mirror.changeShowing(id) { $0.reject(token) }.delta
            case 5 where !tokens.isEmpty:
                let (token, id) = tokens.remove(at: Int(random.next() % UInt64(tokens.count)))
                delta = mirror.changeShowing(id) { $0.confirm(token, revision: revision) }.delta
            default:
                continue
            }
            if let delta { Self.apply(delta, to: &followed) }
            #expect(followed == mirror.list, "step \(step)")
        }
    }
}

/// A list a watcher keeps, for a handler that may run on any thread.
private final class Followed: Sendable {
    let list = Mutex<[Memo]>([])
}
