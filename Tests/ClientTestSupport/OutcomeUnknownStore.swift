import Foundation
import MemoModel
import Synchronization

/// A test hook standing in for a shared store whose connection broke after a commit: it wraps a real store and
/// answers the next write of each armed kind `outcomeUnknown` (505) after the write was applied. The real 505 comes
/// from the PostgreSQL store when its connection breaks or times out during a commit (another engineer's change);
/// this lets the client's handling of it be tested on its own, with everything else real.
package final class OutcomeUnknownStore: ServingStore {
    package enum WriteKind: Sendable, Hashable {
        case create, update, delete
    }

    private struct State {
        var armed: Set<WriteKind>
        var withheld = 0
    }

    private let inner: any ServingStore
    private let state: Mutex<State>

    package init(_ inner: any ServingStore, armed: Set<WriteKind> = []) {
        self.inner = inner
        state = Mutex(State(armed: armed))
    }

    /// The next write of `kind` is applied and answered 505.
    package func arm(_ kind: WriteKind) {
        state.withLock { _ = $0.armed.insert(kind) }
    }

    /// How many applied writes were answered 505 so far.
    package var withheld: Int { state.withLock { $0.withheld } }

    package func submit(
        _ ops: consuming [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void
    ) {
        let hidden: [Bool] = state.withLock { state in
            ops.map { op in
                let kind: WriteKind = switch op {
                case .create: .create
                case .update: .update
                case .delete: .delete
                case .restore: .update
                }
                return state.armed.remove(kind) != nil
            }
        }
        inner.submit(ops) { [self] results in
            completion(zip(results, hidden).map { result, hide in
                guard hide, case .success = result else { return result }
                state.withLock { $0.withheld += 1 }
                return .failure(.outcomeUnknown("test hook: the write was applied and its answer withheld"))
            })
        }
    }

    package func memo(_ id: UUID) throws(MemoError) -> Memo { try inner.memo(id) }
    package func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        inner.history(id: id, limit: limit, before: before, completion: completion)
    }
    package func trash(
        limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void
    ) {
        inner.trash(limit: limit, before: before, completion: completion)
    }
    package func close() { inner.close() }
    package var revision: UInt64 { inner.revision }
    package var storeStatus: StoreStatus { inner.storeStatus }
    package func watch(from start: WatchStart, _ handler: @escaping @Sendable (WatchEvent) -> Void) -> Subscription {
        inner.watch(from: start, handler)
    }
    package func snapshot() -> (revision: UInt64, memos: [Memo]) { inner.snapshot() }
    package func observeChanges(_ handler: @escaping @Sendable (Change) -> Void) -> Subscription {
        inner.observeChanges(handler)
    }
    package func changes(after revision: UInt64, limit: Int) throws(MemoError) -> (head: UInt64, changes: [Change]) {
        try inner.changes(after: revision, limit: limit)
    }
    package func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        try await perform(.create(id: id ?? UUID(), content: content, insertMicros: insertDate?.unixMicros))
    }
    package func get(id: UUID) async throws -> Memo { try await inner.get(id: id) }
    package func memoList() -> Subject<[Memo]> { inner.memoList() }
    package func contains(id: UUID) -> Bool { inner.contains(id: id) }
    package func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        inner.watchList(handler)
    }
    package func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        try await inner.update(id: id, content: content, expectedRevision: expectedRevision)
    }
    package func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        try await inner.delete(id: id, expectedRevision: expectedRevision)
    }
}
