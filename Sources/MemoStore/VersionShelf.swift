import Foundation
import MemoModel

/// The memory store's kept versions and trash: each memo's last `policy.keep` versions, and each deleted memo
/// (with its versions) until it is purged. The durable stores keep theirs in their database instead.
///
/// A memo created and never changed since has one version, its create, and that version is the table's row: the
/// shelf holds nothing for it (a create then costs the shelf no entry, no allocation and no page of a growing
/// dictionary; most memos are never edited). Its versions move onto the shelf when it is changed: an update, a
/// restore or a delete writes the create version out from the row (`record(_:in:)`, before the row changes), and
/// the reads take the row as that version (`history(id:limit:before:row:)`, `lookup(row:)`). So, for an id:
/// - a `versions` entry holds all its kept versions, oldest first;
/// - no entry, and a live row made after the shelf was (`row.revision > baseRevision`) with versions kept: the
///   row is its one version, a create (every later change would have made an entry);
/// - no entry otherwise: no versions (a memo the store was opened with, as a file made before versions were kept).
/// An id not live has an entry only while it is in the trash (a delete with no trash days, and the purge, drop it).
///
/// A class so that the lookups the planner gets can read it without copying it.
// @unchecked Sendable: it lives inside `StoreState`'s lock and is only touched under it (the planner's lookups
// included: they are called while `StoreState` plans, holding the lock).
final class VersionShelf: @unchecked Sendable {
    let policy: VersionPolicy
    /// The table's revision when the shelf was made: the memos the store opened with are at or below it and
    /// have no versions until they change.
    private let baseRevision: UInt64
    /// The versions of the memos that have more than their row (see above), oldest first: live memos changed
    /// since their create, and memos in the trash.
    private var versions: [UUIDKey: Kept] = [:]
    /// The trash, by id, and the ids in delete order (oldest first).
    private var trashed: [UUIDKey: TrashEntry] = [:]
    private var trashOrder: [(revision: UInt64, id: UUID)] = []

    init(policy: VersionPolicy, baseRevision: UInt64) {
        self.policy = policy
        self.baseRevision = baseRevision
    }

    /// How many versions the shelf holds (not counting the rows that are versions), for tests.
    var count: Int { versions.values.reduce(0) { $0 + $1.count } }

    /// What the planner reads, for a write about the memo whose live row is `row` (nil when it is not live): the
    /// planner looks up the versions and the trash entry of its write's own memo only.
    func lookup(row: Memo?) -> VersionLookup {
        VersionLookup(
            version: { [self] id, revision in
                if let kept = versions[UUIDKey(id)] { return kept.last(revision: revision) }
                guard let row, row.id == id, row.revision == revision else { return nil }
                return rowVersion(row)
            },
            trashed: { [self] id in trashed[UUIDKey(id)] })
    }

    /// The one version a live memo with no entry has: its row, as its create (nil for a memo the store opened
    /// with, or with no versions kept).
    private func rowVersion(_ row: Memo) -> MemoVersion? {
        guard policy.keep > 0, row.revision > baseRevision else { return nil }
        return MemoVersion(
            id: row.id, revision: row.revision, kind: .create, micros: row.updateMicros, author: row.author,
            content: row.content)
    }

    /// Keeps what an applied change makes: a version, or a trash entry. Called before `table` applies it, so
    /// that a memo's create version can be taken from its row before the row changes.
    func record(_ change: Change, in table: borrowing MemoTable) {
        let key = UUIDKey(change.memo.id)
        switch change.kind {
        case .created:
            // The trash is empty for most creates: no probe then.
            var wasTrashed = false
            if !trashed.isEmpty, trashed.removeValue(forKey: key) != nil {
                trashOrder.removeAll { $0.id == change.memo.id }
                wasTrashed = true
            }
            // A plain create is its row, unless the id came back from the trash with versions kept there (then
            // it joins them); a restore is a version of kind `restore`, which the row cannot say.
            guard policy.keep > 0, change.restored || wasTrashed else { return }
            if change.restored || versions[key] != nil { keep(change, key) }
        case .updated:
            guard policy.keep > 0 else { return }
            if versions[key] == nil, let first = table.memo(change.memo.id).flatMap(rowVersion) {
                versions[key] = .one(first)
            }
            keep(change, key)
        case .deleted:
            if policy.trashDays == 0 {
                versions[key] = nil
                return
            }
            // The memo's create version goes with it to the trash.
            if versions[key] == nil, let first = table.memo(change.memo.id).flatMap(rowVersion) {
                versions[key] = .one(first)
            }
            trashed[key] = TrashEntry(
                memo: change.memo, revision: change.revision, deletedMicros: change.memo.updateMicros,
                deletedBy: change.memo.author)
            trashOrder.append((change.revision, change.memo.id))
        }
    }

    /// Adds the version `change` makes to the versions kept for `key` (policy.keep > 0).
    private func keep(_ change: Change, _ key: UUIDKey) {
        guard let kind = change.versionKind else { return }
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

    /// See `VersionReading.history`; `row` is the memo's live row (nil when it is not live).
    func history(id: UUID, limit: Int, before: UInt64?, row: Memo?) throws(MemoError) -> VersionPage {
        let key = UUIDKey(id)
        let kept: [MemoVersion]
        if let entry = versions[key] {
            kept = entry.all
        } else if let row {
            kept = rowVersion(row).map { [$0] } ?? []
        } else if trashed[key] != nil {
            kept = []
        } else {
            throw .notFound(id)
        }
        let older = kept.reversed().filter { before == nil || $0.revision < before! }
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

/// One memo's kept versions, oldest first. A memo in the trash with only its create, or one restored from it, has
/// one: held in the dictionary's slot itself, with no array.
private enum Kept {
    case one(MemoVersion)
    case many([MemoVersion])

    var count: Int {
        switch self {
        case .one: 1
        case .many(let versions): versions.count
        }
    }

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
