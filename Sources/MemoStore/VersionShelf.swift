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
    private var versions: [UUIDKey: Kept] = [:]
    /// The trash, by id, and the ids in delete order (oldest first).
    private var trashed: [UUIDKey: TrashEntry] = [:]
    private var trashOrder: [(revision: UInt64, id: UUID)] = []

    init(policy: VersionPolicy) {
        self.policy = policy
    }

    /// What the planner reads.
    var lookup: VersionLookup {
        VersionLookup(
            version: { [self] id, revision in versions[UUIDKey(id)]?.last(revision: revision) },
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
        // The trash is empty for most creates: no probe then.
        if change.kind == .created, !trashed.isEmpty, trashed.removeValue(forKey: key) != nil {
            trashOrder.removeAll { $0.id == change.memo.id }
        }
        guard policy.keep > 0, let kind = change.versionKind else { return }
        let memo = change.memo
        let version = MemoVersion(
            id: memo.id, revision: change.revision, kind: kind, micros: memo.updateMicros, author: memo.author,
            content: memo.content)
        // One probe, and the kept versions changed in place (no copy of the array on each update).
        switch versions.index(forKey: key) {
        case nil:
            versions[key] = .one(version)
        case let index?:
            versions.values[index].append(version, keep: policy.keep)
        }
    }

    /// See `VersionReading.history`; `live` says whether the id is a memo now.
    func history(id: UUID, limit: Int, before: UInt64?, live: Bool) throws(MemoError) -> VersionPage {
        let key = UUIDKey(id)
        guard live || trashed[key] != nil || versions[key] != nil else { throw .notFound(id) }
        let older = (versions[key]?.all ?? []).reversed().filter { before == nil || $0.revision < before! }
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

/// One memo's kept versions, oldest first. Most memos are created and never edited: their one version is held in
/// the dictionary's slot itself, so a create allocates no array (and the store's teardown frees none).
private enum Kept {
    case one(MemoVersion)
    case many([MemoVersion])

    var all: [MemoVersion] {
        switch self {
        case .one(let version): [version]
        case .many(let versions): versions
        }
    }

    /// The newest kept version made by `revision`.
    func last(revision: UInt64) -> MemoVersion? {
        switch self {
        case .one(let version): version.revision == revision ? version : nil
        case .many(let versions): versions.last { $0.revision == revision }
        }
    }

    /// Appends `version`, keeping the newest `keep` (at least 1).
    mutating func append(_ version: MemoVersion, keep: Int) {
        switch self {
        case .one(let first):
            self = keep > 1 ? .many([first, version]) : .one(version)
        case .many(var versions):
            self = .many([])  // lets `versions` be the array's only reference, so it grows in place
            versions.append(version)
            if versions.count > keep { versions.removeFirst(versions.count - keep) }
            self = .many(versions)
        }
    }
}
