import Foundation
import MemoModel

/// The memory store's kept versions and trash: each memo's last `policy.keep` versions, and each deleted memo
/// (with its versions) until it is purged. The durable stores keep theirs in their database instead.
///
/// A class so that the lookups the planner gets can read it without copying it.
// @unchecked Sendable: it lives inside `StoreState`'s lock and is only touched under it (the planner's lookups
// included: they are called while `StoreState` plans, holding the lock).
final class VersionShelf: @unchecked Sendable {
    let policy: VersionPolicy
    /// Each memo's versions, oldest first (live memos and memos in the trash).
    private var versions: [UUIDKey: [MemoVersion]] = [:]
    /// The trash, by id, and the ids in delete order (oldest first).
    private var trashed: [UUIDKey: TrashEntry] = [:]
    private var trashOrder: [(revision: UInt64, id: UUID)] = []

    init(policy: VersionPolicy) {
        self.policy = policy
    }

    /// What the planner reads.
    var lookup: VersionLookup {
        VersionLookup(
            version: { [self] id, revision in versions[UUIDKey(id)]?.last { $0.revision == revision } },
            trashed: { [self] id in trashed[UUIDKey(id)] })
    }

    /// Keeps what an applied change makes: a version, or a trash entry.
    func record(_ change: Change) {
        let key = UUIDKey(change.memo.id)
        if change.kind == .deleted {
            if policy.trashDays == 0 {
                versions[key] = nil
                return
            }
            trashed[key] = TrashEntry(
                memo: change.memo, revision: change.revision, deletedMicros: change.memo.updateMicros,
                deletedBy: change.memo.author)
            trashOrder.append((change.revision, change.memo.id))
            return
        }
        if change.kind == .created, trashed.removeValue(forKey: key) != nil {
            trashOrder.removeAll { $0.id == change.memo.id }
        }
        guard policy.keep > 0, let kind = change.versionKind else { return }
        let memo = change.memo
        var kept = versions[key] ?? []
        kept.append(MemoVersion(
            id: memo.id, revision: change.revision, kind: kind, micros: memo.updateMicros, author: memo.author,
            content: memo.content))
        if kept.count > policy.keep { kept.removeFirst(kept.count - policy.keep) }
        versions[key] = kept
    }

    /// See `VersionReading.history`; `live` says whether the id is a memo now.
    func history(id: UUID, limit: Int, before: UInt64?, live: Bool) throws(MemoError) -> VersionPage {
        let key = UUIDKey(id)
        guard live || trashed[key] != nil || versions[key] != nil else { throw .notFound(id) }
        let older = (versions[key] ?? []).reversed().filter { before == nil || $0.revision < before! }
        return VersionPage(versions: Array(older.prefix(limit)), more: older.count > limit)
    }

    /// See `VersionReading.trash`.
    func trash(limit: Int, before: UInt64?) -> TrashPage {
        let older = trashOrder.reversed().filter { before == nil || $0.revision < before! }
        let entries = older.prefix(limit).compactMap { trashed[UUIDKey($0.id)] }
        return TrashPage(entries: entries, more: older.count > limit)
    }

    /// Purges the memos deleted before `cutoffMicros`, with their versions. - Returns: how many.
    @discardableResult
    func purge(deletedBefore cutoffMicros: Int64) -> Int {
        let gone = trashOrder.filter { trashed[UUIDKey($0.id)].map { $0.deletedMicros < cutoffMicros } ?? true }
        guard !gone.isEmpty else { return 0 }
        for (_, id) in gone {
            trashed[UUIDKey(id)] = nil
            versions[UUIDKey(id)] = nil
        }
        let ids = Set(gone.map { UUIDKey($0.id) })
        trashOrder.removeAll { ids.contains(UUIDKey($0.id)) }
        return gone.count
    }
}
