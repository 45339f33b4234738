/// What a change did to a memo.
public enum ChangeKind: UInt8, Sendable, Hashable, CaseIterable {
    case created = 1
    case updated = 2
    case deleted = 3

    public var name: String {
        switch self {
        case .created: return "created"
        case .updated: return "updated"
        case .deleted: return "deleted"
        }
    }
}

/// One change to the store, published to subscribers and kept in the history.
public struct Change: Sendable, Hashable {
    /// The global revision this change produced; revisions start at 1 and have no gaps.
    public var revision: UInt64
    public var kind: ChangeKind
    /// The memo after the change; for a delete, the memo as it was, with `revision` set to the delete's (and
    /// `author` set to the deleter).
    public var memo: Memo
    /// A restore: an update that made an old version current again, or a create that brought a memo back from the
    /// trash. Kept with the memo's versions (kind `restore`); the change feed does not carry it.
    public var restored: Bool

    public init(revision: UInt64, kind: ChangeKind, memo: Memo, restored: Bool = false) {
        self.revision = revision
        self.kind = kind
        self.memo = memo
        self.restored = restored
    }

    /// The kind of version the change makes, nil for a delete (which makes none: it moves the memo to the trash).
    public var versionKind: VersionKind? {
        if restored { return kind == .deleted ? nil : .restore }
        switch kind {
        case .created: return .create
        case .updated: return .update
        case .deleted: return nil
        }
    }
}

/// Where a watcher starts.
public enum WatchStart: Sendable, Hashable {
    /// A snapshot of every memo at the current revision R, then every change after R.
    case snapshot
    /// Every change after this revision (none when it is the current one), or `historyGone`.
    case after(UInt64)
}

/// What a watcher receives, in order.
public enum WatchEvent: Sendable, Hashable {
    /// Every memo, newest first, at `revision`; changes after it follow.
    case snapshot(revision: UInt64, memos: [Memo])
    /// A resumed watch is live: the changes after the requested revision up to `head` follow, then live ones.
    case resumed(head: UInt64)
    /// One change.
    case change(Change)
    /// The requested revision is not covered by the history; nothing else follows on this watch.
    case historyGone(requested: UInt64, oldestAvailable: UInt64)
}

/// The last changes of a store, bounded, for watchers that resume from a revision.
public struct ChangeHistory: Sendable {
    public let capacity: Int
    private var ring: [Change] = []
    private var start = 0
    /// The revision of the newest change the store has made (whether or not still held).
    public private(set) var head: UInt64

    public init(capacity: Int = MemoLimits.defaultHistoryCapacity, head: UInt64 = 0) {
        precondition(capacity > 0, "history capacity must be positive")
        self.capacity = capacity
        self.head = head
    }

    public var count: Int { ring.count }

    /// The oldest revision R such that `changes(after: R)` succeeds.
    public var oldestResumable: UInt64 { head - UInt64(ring.count) }

    /// Appends the next change; its revision must be `head + 1`.
    /// - Returns: the oldest change, when the history was full and let it go: a caller holding a lock can drop it
    ///   after unlocking (freeing a change a hundred thousand revisions old misses the cache twice).
    @discardableResult
    public mutating func append(_ change: Change) -> Change? {
        precondition(change.revision == head + 1, "history revisions must be contiguous")
        head = change.revision
        if ring.count < capacity {
            ring.append(change)
            return nil
        }
        // Swapped out, not copied: a copy would retain the old change (touching its cold memory under the lock).
        var taken = change
        swap(&ring[start], &taken)
        start = (start + 1) % capacity
        return taken
    }

    /// The changes after `revision`, oldest first: every one, or the first `limit`.
    /// - Throws: `MemoError.historyGone` when `revision` is older than the history holds or newer than `head`.
    public func changes(after revision: UInt64, limit: Int = .max) throws(MemoError) -> [Change] {
        guard revision >= oldestResumable, revision <= head else {
            throw .historyGone(requested: revision, oldestAvailable: oldestResumable)
        }
        let after = Int(head - revision)
        let wanted = min(after, max(0, limit))
        var result: [Change] = []
        result.reserveCapacity(wanted)
        for offset in (ring.count - after)..<(ring.count - after + wanted) {
            result.append(ring[(start + offset) % ring.count])
        }
        return result
    }
}
