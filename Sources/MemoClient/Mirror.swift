import Foundation
import MemoModel
/// What applying a batch of subscription events did to a mirror, in order.
public enum MirrorEvent: Sendable, Hashable {
    /// The mirror was (re)built from a snapshot at `revision`. `resync` is false for the first base; true when
    /// the snapshot replaced a base the mirror had (after a `history-gone`): the changes in between are unknown,
    /// so `memos` is the whole new state, never a made-up difference.
    case reset(revision: UInt64, memos: [Memo], resync: Bool)
    /// Changes applied, in revision order.
    case changes([Change])
    /// The mirror caught up with the server (it is no longer stale).
    case fresh(revision: UInt64)
    /// The mirror saw something it cannot apply (a gap, a repeat, an impossible change): subscribe again.
    case resubscribe(reason: String)
    /// The server refused the subscription.
    case failed(String)
}

/// A local write the server has not confirmed yet, shown in the list at once.
public enum PendingWrite: Sendable, Hashable {
    case create(Memo)
    case update(Memo)
    case delete(Memo)

    public var id: UUID {
        switch self {
        case .create(let memo), .update(let memo), .delete(let memo): return memo.id
        }
    }
}

/// The local copy of the server's list as a value: a snapshot, then changes applied strictly in revision order
/// (each exactly once), plus local writes waiting for the server. No sockets and no threads, so every rule can
/// be tested by feeding it events.
public struct Mirror: Sendable {
    /// The memos as the server last told us, at `revision`.
    public private(set) var table = MemoTable()
    /// True until the server has answered: loaded from a cache, or resuming and not caught up with the head.
    public private(set) var isStale = true
    /// Whether `table` is a base that changes can be applied to (a snapshot, or a cache file).
    public private(set) var hasBase = false
    private var incoming: (revision: UInt64, memos: [Memo])?
    /// A base was dropped (the history it needed is gone): the next snapshot replaces it as a resync.
    private var droppedBase = false
    /// The head a resumed subscription must reach before the mirror is fresh.
    private var catchUpTarget: UInt64?
    private var pending: [(token: UInt64, write: PendingWrite, confirmedAt: UInt64?)] = []
    private var nextToken: UInt64 = 1

    public init() {}

    /// A mirror loaded from a cache: a base to resume from, stale until the server answers.
    public init(cachedRevision: UInt64, memos: [Memo]) {
        table = MemoTable(memos: memos, revision: cachedRevision)
        hasBase = true
        isStale = true
    }

    /// The last revision applied.
    public var revision: UInt64 { table.revision }

    /// Where a subscription should start: after `revision` when there is a base, else from a snapshot.
    public var resumeRevision: UInt64? { hasBase ? table.revision : nil }

    /// Forgets the base so that the next subscription asks for a snapshot.
    public mutating func dropBase() {
        if hasBase { droppedBase = true }
        hasBase = false
        incoming = nil
        catchUpTarget = nil
    }

    // MARK: - Subscription events

    /// Applies one read's worth of events and says what happened. Stops at the first event that needs a new
    /// subscription (after dropping the base when the history is gone).
    public mutating func apply(_ events: [SubscriptionEvent]) -> [MirrorEvent] {
        var result: [MirrorEvent] = []
        var applied: [Change] = []
        func flushChanges() {
            if !applied.isEmpty { result.append(.changes(applied)) }
            applied.removeAll()
        }
        for event in events {
            switch event {
            case .snapshot(let revision, let last, let memos):
                if incoming == nil || incoming!.revision != revision {
                    flushChanges()
                    incoming = (revision, [])
                }
                incoming!.memos.append(contentsOf: memos)
                guard last else { continue }
                let snapshot = incoming!
                incoming = nil
                let resync = hasBase || droppedBase
                droppedBase = false
                table = MemoTable(memos: snapshot.memos, revision: snapshot.revision)
                hasBase = true
                catchUpTarget = nil
                result.append(.reset(revision: snapshot.revision, memos: table.list, resync: resync))
                dropConfirmedPending()
                if isStale {
                    isStale = false
                    result.append(.fresh(revision: table.revision))
                }
            case .subscribed(let head):
                guard hasBase else {
                    flushChanges()
                    result.append(.resubscribe(reason: "resumed without a base"))
                    return result
                }
                catchUpTarget = head
                if isStale, table.revision >= head {
                    isStale = false
                    flushChanges()
                    result.append(.fresh(revision: table.revision))
                }
            case .change(let change):
                if let problem = check(change) {
                    flushChanges()
                    result.append(.resubscribe(reason: problem))
                    return result
                }
                table.apply(change)
                applied.append(change)
                if isStale, let target = catchUpTarget, table.revision >= target {
                    isStale = false
                    flushChanges()
                    result.append(.fresh(revision: table.revision))
                }
            case .historyGone(let requested, let oldest):
                flushChanges()
                dropBase()
                result.append(.resubscribe(
                    reason: "the server no longer holds changes after \(requested) (oldest \(oldest))"))
                return result
            case .failed(let code, let message):
                flushChanges()
                result.append(.failed("\(code): \(message)"))
                return result
            }
        }
        flushChanges()
        if !result.isEmpty { dropConfirmedPending() }
        return result
    }

    /// Why `change` cannot be applied next, or nil when it can.
    private func check(_ change: Change) -> String? {
        guard hasBase, incoming == nil else { return "a change arrived before the snapshot was complete" }
        guard change.revision == table.revision + 1 else {
            return "change \(change.revision) arrived after \(table.revision)"
        }
        let exists = table.memo(change.memo.id) != nil
        switch change.kind {
        case .created where exists: return "change \(change.revision) creates a memo that exists"
        case .updated where !exists, .deleted where !exists:
            return "change \(change.revision) \(change.kind.name) a memo the mirror does not have"
        default: return nil
        }
    }

    // MARK: - Local writes

    /// Shows a write at once; returns a token for `confirm` or `reject`.
    public mutating func addPending(_ write: PendingWrite) -> UInt64 {
        let token = nextToken
        nextToken += 1
        pending.append((token, write, nil))
        return token
    }

    /// The server made the write at `revision`; it stays shown as pending until the mirror has applied that
    /// revision (so the list never flickers back to the old state).
    public mutating func confirm(_ token: UInt64, revision: UInt64) {
        guard let index = pending.firstIndex(where: { $0.token == token }) else { return }
        pending[index].confirmedAt = revision
        dropConfirmedPending()
    }

    /// The server refused the write: it disappears from the list.
    public mutating func reject(_ token: UInt64) {
        pending.removeAll { $0.token == token }
    }

    private mutating func dropConfirmedPending() {
        // Without a base (nothing subscribed) the server's answer is all there is to wait for.
        let applied = hasBase ? table.revision : UInt64.max
        pending.removeAll { entry in entry.confirmedAt.map { $0 <= applied } ?? false }
    }

    /// A memo as the list shows it (pending writes laid over the server's table); nil when deleted or unknown.
    public func shown(_ id: UUID) -> Memo? {
        var memo = table.memo(id)
        for (_, write, _) in pending where write.id == id {
            switch write {
            case .create(let created): memo = memo ?? created
            case .update(let updated): memo = memo == nil ? nil : updated
            case .delete: memo = nil
            }
        }
        return memo
    }

    /// The ids with writes not yet confirmed and applied.
    public var pendingIDs: Set<UUID> { Set(pending.map(\.write.id)) }

    /// Every memo, newest first, with the pending writes laid over the server's list.
    public var list: [Memo] {
        let base = table.list
        guard !pending.isEmpty else { return base }
        let overlay = self.overlay
        var result: [Memo] = []
        result.reserveCapacity(base.count + overlay.newcomers.count)
        var newcomers = overlay.newcomers[...]
        for memo in base where !overlay.removed.contains(memo.id) {
            while let first = newcomers.first, first.isNewer(than: memo) {
                result.append(first)
                newcomers.removeFirst()
            }
            result.append(overlay.replaced[memo.id] ?? memo)
        }
        result.append(contentsOf: newcomers)
        return result
    }

    /// What the pending writes do to the server's list.
    private struct Overlay {
        /// Memos of the table shown with a pending edit (their place in the order is the table's).
        var replaced: [UUID: Memo] = [:]
        /// Memos a pending delete hides.
        var removed = Set<UUID>()
        /// Pending creates the table does not hold yet, newest first, none of them removed.
        var newcomers: [Memo] = []
    }

    private var overlay: Overlay {
        var overlay = Overlay()
        var created: [Memo] = []
        for (_, write, _) in pending {
            switch write {
            case .create(let memo):
                if table.memo(memo.id) == nil, !created.contains(where: { $0.id == memo.id }) {
                    created.append(memo)
                }
            case .update(let memo):
                overlay.replaced[memo.id] = memo
                if let index = created.firstIndex(where: { $0.id == memo.id }) { created[index] = memo }
            case .delete(let memo):
                overlay.removed.insert(memo.id)
            }
        }
        overlay.newcomers = created.filter { !overlay.removed.contains($0.id) }.sorted { $0.isNewer(than: $1) }
        return overlay
    }

    // MARK: - Position edits

    /// Where each of `ids` stands in `list` (and as what memo); ids not listed are left out. O(log N) per id plus
    /// the pending writes, without building the list.
    public func shownEntries(_ ids: Set<UUID>) -> [UUID: (memo: Memo, position: Int)] {
        guard !ids.isEmpty else { return [:] }
        let overlay = pending.isEmpty ? Overlay() : self.overlay
        let hidden = overlay.removed.compactMap { table.memo($0) }
        var entries: [UUID: (memo: Memo, position: Int)] = [:]
        for id in ids where !overlay.removed.contains(id) {
            let shown: Memo
            let placed: Memo
            if let base = table.memo(id) {
                (shown, placed) = (overlay.replaced[id] ?? base, base)
            } else if let newcomer = overlay.newcomers.first(where: { $0.id == id }) {
                (shown, placed) = (newcomer, newcomer)
            } else {
                continue
            }
            let position = table.countNewer(than: placed) - hidden.count { $0.isNewer(than: placed) }
                + overlay.newcomers.count { $0.id != id && $0.isNewer(than: placed) }
            entries[id] = (shown, position)
        }
        return entries
    }

    /// `apply(_:)`, also saying what it did to `list`: a reset when a snapshot rebuilt the mirror, else the
    /// position edits of the memos the events and the pending writes touched (nil when the list did not change).
    public mutating func applyShowing(_ events: [SubscriptionEvent]) -> (events: [MirrorEvent], delta: ListDelta?) {
        var ids = pendingIDs
        for case .change(let change) in events { ids.insert(change.memo.id) }
        let before = shownEntries(ids)
        let result = apply(events)
        if result.contains(where: { if case .reset = $0 { return true } else { return false } }) {
            return (result, .reset(list))
        }
        let edits = ListDelta.edits(before: before, after: shownEntries(ids))
        return (result, edits.isEmpty ? nil : .edits(edits))
    }

    /// Runs a change of the pending writes (`addPending`, `confirm`, `reject`) about `id` and says what it did to
    /// `list`, as `applyShowing` does.
    public mutating func changeShowing<Result>(
        _ id: UUID?, _ body: (inout Mirror) throws -> Result
    ) rethrows -> (result: Result, delta: ListDelta?) {
        var ids = pendingIDs
        if let id { ids.insert(id) }
        let before = shownEntries(ids)
        let result = try body(&self)
        let edits = ListDelta.edits(before: before, after: shownEntries(ids))
        return (result, edits.isEmpty ? nil : .edits(edits))
    }
}
