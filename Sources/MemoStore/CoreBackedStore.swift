import Foundation
import MemoModel

/// A store whose reads and change feed are those of its `StoreCore`: the memory store and the SQLite store differ
/// only in how a write becomes durable, so everything else is written here once.
public protocol CoreBackedStore: ServingStore {
    var core: StoreCore { get }
}

extension CoreBackedStore {
    public func get(id: UUID) async throws -> Memo {
        try core.memo(id)
    }

    public func memo(_ id: UUID) throws(MemoError) -> Memo {
        try core.memo(id)
    }

    public func memoList() -> Subject<[Memo]> {
        core.memoList()
    }

    public func contains(id: UUID) -> Bool {
        do {
            _ = try core.memo(id)
            return true
        } catch {
            // Not found, or the store is closed: either way the list does not show it.
            return false
        }
    }

    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        core.watchList(handler)
    }

    public var revision: UInt64 { core.revision }

    public func watch(from start: WatchStart, _ handler: @escaping @Sendable (WatchEvent) -> Void) -> Subscription {
        core.watch(from: start, handler)
    }

    public func snapshot() -> (revision: UInt64, memos: [Memo]) {
        core.snapshot()
    }

    public func page(after cursor: ListCursor?, limit: Int) -> ListPage {
        core.page(after: cursor, limit: limit)
    }

    public func changes(after revision: UInt64) throws(MemoError) -> (head: UInt64, changes: [Change]) {
        try core.changes(after: revision)
    }

    public func observeChanges(_ handler: @escaping @Sendable (Change) -> Void) -> Subscription {
        core.observeChanges(handler)
    }
}

extension CoreBackedStore {
    /// The memory store's: kind `memory`, no location. (SQLite and PostgreSQL say more.)
    public var storeStatus: StoreStatus {
        StoreStatus(
            kind: "memory", location: nil, memoCount: core.memoCount, oldestRetained: core.oldestResumable)
    }
}
