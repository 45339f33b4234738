import Foundation
import MemoModel

/// Every memo in memory, for tests, view models and `--store memory`.
public final class MemoryStore: StateBackedStore {
    public let storeState: StoreState
    private let clock: @Sendable () -> Int64

    /// - Parameters:
    ///   - memos: memos to start with (tests pass their own).
    ///   - historyCapacity: how many changes are kept for resuming watchers.
    ///   - clock: microseconds since the Unix epoch; tests may pass a fixed clock.
    public init(
        memos: [Memo] = [],
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros }
    ) {
        let revision = memos.map(\.revision).max() ?? 0
        storeState = StoreState(
            table: MemoTable(memos: memos, revision: revision),
            history: ChangeHistory(capacity: historyCapacity, head: revision))
        self.clock = clock
    }

    private func write(_ op: WriteOp) throws(MemoError) -> Memo {
        switch storeState.planAndApply([op], nowMicros: clock())[0] {
        case .success(let outcome): return outcome.memo
        case .failure(let error): throw error
        }
    }

    public func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        try write(.create(id: id ?? UUID(), content: content, insertMicros: insertDate?.unixMicros))
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        try write(.update(id: id, content: content, expectedRevision: expectedRevision))
    }

    public func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        try write(.delete(id: id, expectedRevision: expectedRevision))
    }

    public func submit(_ ops: [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void) {
        completion(storeState.planAndApply(ops, nowMicros: clock()))
    }

    /// Stops the store; later calls throw `closed`.
    public func close() {
        storeState.close()
    }
}
