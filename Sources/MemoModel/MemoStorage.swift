import Foundation

/// Where memos live, as the view models see it: async calls that throw `MemoError`, and subjects to follow the list.
///
/// Three homes implement it: `MemoryStore`, `SQLiteStore` (the server's) and the client's remote store, so that a
/// view model cannot tell them apart. Every method throws `MemoError`.
public protocol MemoStorage: AnyObject, Sendable {
    /// Creates a memo. With an `id` that already holds the same content it returns that memo unchanged (so a retry
    /// is harmless); with different content it throws `conflict`.
    /// - Parameters:
    ///   - id: the new memo's id; nil lets the store pick one.
    ///   - insertDate: the insert date to keep (an import); nil means now.
    @discardableResult
    func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo

    /// The memo with this id. - Throws: `MemoError.notFound`.
    func get(id: UUID) async throws -> Memo

    /// A subject holding every memo, newest first, re-sent after every change. Building
    /// the whole list costs O(N): a store may do it only while someone holds a subscription to the subject (and
    /// once per call). For one memo, use `contains(id:)` or `get(id:)`; to follow the list, `watchList`.
    func memoList() -> Subject<[Memo]>

    /// Whether the list now shows the memo with this id, without building the list.
    func contains(id: UUID) -> Bool

    /// The list as position edits: `handler` first gets `.reset` with every memo (newest first), then each later
    /// change of the list as `.edits`, in order, each once, never two at a time. A change costs the watcher the
    /// memos it touches, not the whole list. (The default, for a store that only has `memoList()`, sends the
    /// whole list as a `.reset` each time.)
    func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription

    /// Replaces a memo's content, keeping its id, insert date and position.
    /// - Parameter expectedRevision: when given, the update happens only if the memo is still at it.
    /// - Throws: `notFound`, `conflict` on a revision mismatch, `contentTooLarge`.
    @discardableResult
    func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo

    /// The same, and with `merge` a stale `expectedRevision` is not a conflict when the store still keeps that
    /// version and the lines changed since do not overlap or touch this update's: the store merges them and the
    /// update is made with the merged text (`WriteOp.update`, `StaleUpdate`). The default, for a store that cannot
    /// merge, is the strict update: the conflict as always.
    @discardableResult
    func update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool) async throws -> Memo

    /// Deletes a memo and returns it as it was.
    /// - Throws: `notFound` (deleting a memo that is gone is an error, not a no-op), `conflict` on a revision
    ///   mismatch.
    @discardableResult
    func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo
}

extension MemoStorage {
    /// The default, for a store that only has `memoList()`: looks through the whole list.
    public func contains(id: UUID) -> Bool {
        memoList().value?.contains { $0.id == id } ?? false
    }

    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        memoList().subscribe { handler(.reset($0)) }
    }

    /// Creates a memo with a new id, dated now.
    @discardableResult
    public func createMemo(content: String) async throws -> Memo {
        try await create(content: content, id: nil, insertDate: nil)
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool) async throws -> Memo {
        try await update(id: id, content: content, expectedRevision: expectedRevision)
    }

    /// Replaces `memo`'s content whatever its revision now is: the last writer wins.
    @discardableResult
    public func update(memo: Memo, content: String) async throws -> Memo {
        try await update(id: memo.id, content: content, expectedRevision: nil)
    }

    /// Deletes `memo` whatever its revision now is.
    @discardableResult
    public func delete(memo: Memo) async throws -> Memo {
        try await delete(id: memo.id, expectedRevision: nil)
    }
}

/// A store that publishes its changes with revisions: what the server serves to subscribers.
public protocol ChangeFeed: Sendable {
    /// The revision of the last change.
    var revision: UInt64 { get }

    /// Watches the store: `handler` first gets a snapshot, or (resuming) `resumed` and every change after the
    /// revision, or `historyGone`; then every later change, in revision order, each once. The handler is never
    /// called twice at a time and must not block; the first events may arrive before this returns.
    func watch(from start: WatchStart, _ handler: @escaping @Sendable (WatchEvent) -> Void) -> Subscription

    /// The current memos, newest first, and the revision they are at.
    func snapshot() -> (revision: UInt64, memos: [Memo])

    /// At most `limit` memos (0: no limit) listed after `cursor` (from the newest when nil), newest first, at one
    /// revision, and whether more follow: what the server answers `list-page` with. The stores read it from their
    /// table's order in O(log N + limit).
    func page(after cursor: ListCursor?, limit: Int) -> ListPage

    /// Calls `handler` with every change from now on, in revision order, synchronously while the store applies it
    /// (under the store's lock): the fast path for a server's fan-out. The handler must be quick, must not block
    /// and must not call the store.
    func observeChanges(_ handler: @escaping @Sendable (Change) -> Void) -> Subscription

    /// The changes after `revision` (every one, or the first `limit`) and the store's head, read at one instant.
    /// - Throws: `historyGone` when the history no longer holds them (or `revision` is ahead of the store).
    func changes(after revision: UInt64, limit: Int) throws(MemoError) -> (head: UInt64, changes: [Change])
}

extension ChangeFeed {
    /// Every change after `revision` and the revision they lead to, read at one instant.
    /// - Throws: `historyGone` when the history no longer holds them (or `revision` is ahead of the store).
    public func changes(after revision: UInt64) throws(MemoError) -> (head: UInt64, changes: [Change]) {
        try changes(after: revision, limit: .max)
    }
}

/// What the server needs of a store: the storage protocol and the change feed, plus a callback form of writes
/// (so that I/O threads never wait on a write) and synchronous reads of the in-memory table.
public protocol ServingStore: MemoStorage, ChangeFeed, VersionReading {
    /// Submits writes to be applied in order; `completion` runs once, on any thread, with one result per write
    /// (in the same order) after every one of them is durable or has failed. A batch costs the store one lock
    /// and one wake-up instead of one per write. The batch is the store's (`consuming`): the caller gives it its
    /// only reference, so that a store applying it at once (the memory store) moves each op out rather than
    /// copying it whole.
    func submit(
        _ ops: consuming [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void)

    /// The memo with this id, read without waiting. - Throws: `notFound`, `closed`.
    func memo(_ id: UUID) throws(MemoError) -> Memo

    /// Finishes the writes already submitted, then closes; later calls fail with `closed`.
    func close()

    /// Whether the store can serve now, and if not why: what `status`, `/readyz` and the lag policy read. A store
    /// that cannot fall behind (memory, SQLite) is always ready; a shared one (PostgreSQL) is not while its
    /// database is unreachable or its feed lags. Cheap to read from any thread.
    var readiness: StoreReadiness { get }

    /// Calls `handler` with a reason each time the store finds that it cannot follow its shared database (its
    /// feed lags past its bound, or fell below the retained history), before it reloads: the server lets every
    /// client go (going-away 504 `lagging`). Stores that cannot fall behind never call it.
    func observeLetGo(_ handler: @escaping @Sendable (String) -> Void) -> Subscription
    /// The store's kind, place, size and (shared stores) how it follows its database: what `status` and
    /// `/metrics` show. Cheap to read from any thread.
    var storeStatus: StoreStatus { get }
}

/// Whether a store can serve now.
public enum StoreReadiness: Sendable, Hashable, CustomStringConvertible {
    case ready
    /// Not ready, with a reason for people (`store unreachable`, `feed lagging 7.2 s`, `loading a snapshot`).
    case notReady(String)

    public var isReady: Bool { self == .ready }

    public var description: String {
        switch self {
        case .ready: return "ready"
        case .notReady(let reason): return "not ready (\(reason))"
        }
    }
}

extension ChangeFeed {
    /// A page cut from the whole snapshot, for a feed with no ordered table of its own: O(N).
    public func page(after cursor: ListCursor?, limit: Int) -> ListPage {
        let (revision, all) = snapshot()
        let after = cursor.map { cursor in all.drop { !cursor.precedes($0) } } ?? all[...]
        let memos = limit > 0 ? Array(after.prefix(limit)) : Array(after)
        return ListPage(revision: revision, memos: memos, more: after.count > memos.count)
    }
}

extension ServingStore {
    /// A store that cannot fall behind is always ready.
    public var readiness: StoreReadiness { .ready }

    /// A store that cannot fall behind never lets go.
    public func observeLetGo(_ handler: @escaping @Sendable (String) -> Void) -> Subscription { Subscription {} }

    /// Submits one write; `completion` runs once, on any thread, after the write is durable (or has failed).
    public func submit(_ op: WriteOp, completion: @escaping @Sendable (Result<WriteOutcome, MemoError>) -> Void) {
        submit([op]) { results in completion(results[0]) }
    }

    /// Submits one write and waits for it: the async form the durable stores' `create`, `update` and `delete` use.
    public func perform(_ op: WriteOp) async throws -> Memo {
        try await withCheckedThrowingContinuation { continuation in
            submit(op) { result in continuation.resume(with: result.map(\.memo).mapError { $0 as Error }) }
        }
    }

    // The durable stores' writes: each is one submitted write, waited for. (The memory store applies its writes
    // at once and keeps its own.)

    public func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        try await perform(.create(id: id ?? UUID.random(), content: content, insertMicros: insertDate?.unixMicros))
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        try await perform(.update(id: id, content: content, expectedRevision: expectedRevision))
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool) async throws -> Memo {
        try await perform(.update(id: id, content: content, expectedRevision: expectedRevision, merge: merge))
    }

    public func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        try await perform(.delete(id: id, expectedRevision: expectedRevision))
    }

    /// Restores a version of a live memo, or brings a memo back from the trash (see `WriteOp.restore`).
    @discardableResult
    public func restore(
        id: UUID, revision: UInt64?, expectedRevision: UInt64? = nil, author: Author = .none
    ) async throws -> Memo {
        try await perform(.restore(id: id, revision: revision, expectedRevision: expectedRevision, author: author))
    }
}
