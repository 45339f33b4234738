import Foundation
import MemoModel

/// Every memo in memory, for tests, view models and `--store memory`.
public final class MemoryStore: StateBackedStore {
    public let storeState: StoreState
    private let clock: @Sendable () -> Int64
    private let versions: VersionPolicy

    /// - Parameters:
    ///   - memos: memos to start with (tests pass their own).
    ///   - historyCapacity: how many changes are kept for resuming watchers.
    ///   - clock: microseconds since the Unix epoch; tests may pass a fixed clock.
    ///   - versions: the versions kept per memo and the days the trash keeps a deleted memo (purged at the next
    ///     write after that).
    public init(
        memos: [Memo] = [],
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros },
        versions: VersionPolicy = .standard
    ) {
        let revision = memos.map(\.revision).max() ?? 0
        storeState = StoreState(
            table: MemoTable(memos: memos, revision: revision),
            history: ChangeHistory(capacity: historyCapacity, head: revision), versions: versions)
        self.clock = clock
        self.versions = versions
    }

    private func write(_ op: WriteOp) throws(MemoError) -> Memo {
        let now = clock()
        storeState.purgeTrash(deletedBefore: versions.purgeBefore(nowMicros: now))
        switch storeState.planAndApply([op], nowMicros: now)[0] {
        case .success(let outcome): return outcome.memo
        case .failure(let error): throw error
        }
    }

    public func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        try write(.create(id: id ?? UUID.random(), content: content, insertMicros: insertDate?.unixMicros))
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        try write(.update(id: id, content: content, expectedRevision: expectedRevision))
    }

    public func update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool) async throws -> Memo {
        try write(.update(id: id, content: content, expectedRevision: expectedRevision, merge: merge))
    }

    public func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        try write(.delete(id: id, expectedRevision: expectedRevision))
    }

    public func submit(
        _ ops: consuming [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void
    ) {
        let now = clock()
        storeState.purgeTrash(deletedBefore: versions.purgeBefore(nowMicros: now))
        completion(storeState.planAndApply(consume ops, nowMicros: now))
    }

    public func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        completion(Result { () throws(MemoError) in try storeState.history(id: id, limit: limit, before: before) })
    }

    public func trash(
        limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void
    ) {
        storeState.purgeTrash(deletedBefore: versions.purgeBefore(nowMicros: clock()))
        completion(Result { () throws(MemoError) in try storeState.trash(limit: limit, before: before) })
    }

    /// Stops the store; later calls throw `closed`.
    public func close() {
        storeState.close()
    }
}
