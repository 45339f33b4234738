import Foundation
import MemoClient
import MemoModel
import Testing

/// Memos and changes for mirror tests: memo `n` is inserted at time `n`.
private func memo(_ n: Int, _ content: String? = nil, revision: UInt64) -> Memo {
    Memo(id: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n))!, content: content ?? "memo \(n)",
         insertMicros: Int64(n), updateMicros: Int64(n), revision: revision)
}

private func created(_ n: Int, at revision: UInt64) -> SubscriptionEvent {
    .change(Change(revision: revision, kind: .created, memo: memo(n, revision: revision)))
}

@Suite("Client: the mirror as a value")
struct ClientMirrorTests {
    @Test func aChunkedSnapshotThenChangesInOrderGiveTheListNewestFirst() {
        var mirror = Mirror()
        #expect(mirror.resumeRevision == nil)
        #expect(mirror.apply([.snapshot(revision: 5, last: false, memos: [memo(2, revision: 4)])]).isEmpty)
        let events = mirror.apply([.snapshot(revision: 5, last: true, memos: [memo(1, revision: 1)]),
                                   created(3, at: 6), created(4, at: 7)])
        #expect(events.count == 3)
        guard case .reset(5, let memos, false) = events[0] else { Issue.record("\(events)"); return }
        #expect(memos.map(\.content) == ["memo 2", "memo 1"])
        #expect(events[1] == .fresh(revision: 5))
        guard case .changes(let changes) = events[2] else { Issue.record("\(events)"); return }
        #expect(changes.map(\.revision) == [6, 7])
        #expect(mirror.list.map(\.content) == ["memo 4", "memo 3", "memo 2", "memo 1"])
        #expect(mirror.resumeRevision == 7)
    }

    @Test func aGapARepeatOrAnImpossibleChangeAsksForANewSubscription() {
        var mirror = Mirror()
        _ = mirror.apply([.snapshot(revision: 1, last: true, memos: [memo(1, revision: 1)])])
        #expect(mirror.apply([created(2, at: 3)]) == [.resubscribe(reason: "change 3 arrived after 1")])
        #expect(mirror.apply([created(2, at: 1)]) == [.resubscribe(reason: "change 1 arrived after 1")])
        let again = mirror.apply([.change(Change(revision: 2, kind: .created, memo: memo(1, revision: 2)))])
        #expect(again == [.resubscribe(reason: "change 2 creates a memo that exists")])
        let ghost = mirror.apply([.change(Change(revision: 2, kind: .deleted, memo: memo(9, revision: 2)))])
        guard case .resubscribe = ghost.first else { Issue.record("\(ghost)"); return }
        // Nothing was applied: the mirror is still at 1 and resumes from there.
        #expect(mirror.revision == 1)
        #expect(mirror.resumeRevision == 1)
        // Changes applied before the bad one in the same batch stay applied.
        let partial = mirror.apply([created(2, at: 2), created(3, at: 4)])
        #expect(partial.count == 2)
        #expect(mirror.revision == 2)
    }

    @Test func aResumeIsStaleUntilItReachesTheHead() {
        var mirror = Mirror(cachedRevision: 2, memos: [memo(1, revision: 1), memo(2, revision: 2)])
        #expect(mirror.isStale)
        #expect(mirror.resumeRevision == 2)
        #expect(mirror.apply([.subscribed(head: 4), created(3, at: 3)]) == [.changes([
            Change(revision: 3, kind: .created, memo: memo(3, revision: 3))])])
        #expect(mirror.isStale)
        let last = mirror.apply([created(4, at: 4)])
        #expect(last.contains(.fresh(revision: 4)))
        #expect(!mirror.isStale)
    }

    @Test func historyGoneMakesTheNextSnapshotAResyncThatReplacesTheListWithNoMadeUpChanges() {
        var mirror = Mirror(cachedRevision: 3, memos: [memo(1, revision: 1), memo(2, revision: 3)])
        let gone = mirror.apply([.historyGone(requested: 3, oldestAvailable: 10)])
        guard case .resubscribe = gone.first else { Issue.record("\(gone)"); return }
        #expect(mirror.resumeRevision == nil)
        // Memo 1 was edited, memo 2 deleted and memo 3 made while we were away.
        let (events, delta) = mirror.applyShowing([.snapshot(revision: 12, last: true, memos: [
            memo(3, revision: 11), memo(1, "edited", revision: 12)])])
        // One reset marked as a resync, carrying the whole new list; no change is made up for what was missed.
        guard case .reset(12, let memos, true) = events.first else { Issue.record("\(events)"); return }
        #expect(memos.map(\.content) == ["memo 3", "edited"])
        #expect(!events.contains { if case .changes = $0 { return true } else { return false } })
        // The list's watchers (the front end) are given the new list as a reset too, not as edits.
        #expect(delta == .reset(memos))
        #expect(mirror.list == memos)
        #expect(mirror.resumeRevision == 12)
        // Changes after the resync apply in order from its revision; a later first snapshot is no resync.
        #expect(mirror.apply([created(4, at: 13)]) == [.changes([
            Change(revision: 13, kind: .created, memo: memo(4, revision: 13))])])
        var fresh = Mirror()
        let first = fresh.apply([.snapshot(revision: 2, last: true, memos: [memo(1, revision: 1)])])
        guard case .reset(2, _, false) = first.first else { Issue.record("\(first)"); return }
    }

    @Test func pendingWritesShowAtOnceAndLeaveWhenAppliedOrRefused() {
        var mirror = Mirror()
        _ = mirror.apply([.snapshot(revision: 1, last: true, memos: [memo(1, revision: 1)])])
        let create = mirror.addPending(.create(memo(5, revision: 0)))
        let edit = mirror.addPending(.update(memo(1, "edited", revision: 1)))
        #expect(mirror.list.map(\.content) == ["memo 5", "edited"])
        #expect(mirror.pendingIDs.count == 2)
        // Confirmed at revision 2 but not yet applied: still shown as pending.
        mirror.confirm(create, revision: 2)
        #expect(mirror.pendingIDs.count == 2)
        _ = mirror.apply([created(5, at: 2)])
        #expect(mirror.pendingIDs == [memo(1, revision: 0).id])
        mirror.reject(edit)
        #expect(mirror.list.map(\.content) == ["memo 5", "memo 1"])
        #expect(mirror.pendingIDs.isEmpty)
        let delete = mirror.addPending(.delete(memo(1, revision: 1)))
        #expect(mirror.list.map(\.content) == ["memo 5"])
        mirror.reject(delete)
        #expect(mirror.list.count == 2)
    }
}
