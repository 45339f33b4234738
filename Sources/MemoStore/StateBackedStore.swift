import Foundation
import MemoModel

/// A store whose reads and change feed are those of its `StoreState`: the memory store and the SQLite store differ
/// only in how a write becomes durable, so everything else is written here once.
public protocol StateBackedStore: ServingStore {
    var storeState: StoreState { get }
}

extension StateBackedStore {
    public func get(id: UUID) async throws -> Memo {
        try storeState.memo(id)
    }

    public func memo(_ id: UUID) throws(MemoError) -> Memo {
        try storeState.memo(id)
    }

    public func memoList() -> Subject<[Memo]> {
        storeState.memoList()
    }

    public func contains(id: UUID) -> Bool {
        do {
            _ = try storeState.memo(id)
            return true
        } catch {
            // Not found, or the store is closed: either way the list does not show it.
            return false
        }
    }

    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        storeState.watchList(handler)
    }

    public var revision: UInt64 { storeState.revision }

    public func watch(from start: WatchStart, _ handler: @escaping @Sendable (WatchEvent) -> Void) -> Subscription {
        storeState.watch(from: start, handler)
    }

    public func snapshot() -> (revision: UInt64, memos: [Memo]) {
        storeState.snapshot()
    }

    public func page(after cursor: ListCursor?, limit: Int) -> ListPage {
        storeState.page(after: cursor, limit: limit)
    }

    public func changes(after revision: UInt64, limit: Int) throws(MemoError) -> (head: UInt64, changes: [Change]) {
        try storeState.changes(after: revision, limit: limit)
    }

    public func observeChanges(_ handler: @escaping @Sendable (Change) -> Void) -> Subscription {
        storeState.observeChanges(handler)
    }
}

extension StateBackedStore {
    /// The memory store's: kind `memory`, no location. (SQLite and PostgreSQL say more.)
    public var storeStatus: StoreStatus {
        StoreStatus(
            kind: "memory", location: nil, memoCount: storeState.memoCount, oldestRetained: storeState.oldestResumable)
    }
}
