import Foundation

/// A write the stores know how to plan and apply. Each carries its author (the client certificate the server took
/// it from; `Author.none` for a store used directly), kept with the change and the memo's versions.
public enum WriteOp: Sendable, Hashable {
    /// Creates a memo with this id, or returns the existing one when the id already holds the same content
    /// (the same UTF-8 bytes). The dates are kept when given (an import); `updateMicros` must not be before the
    /// insert date.
    case create(id: UUID, content: String, insertMicros: Int64?, updateMicros: Int64? = nil, author: Author = .none)
    /// Replaces a memo's content. `merge`: on a revision conflict the store may merge the content against the
    /// version at `expectedRevision` (the base); a store that does not merge answers the conflict as usual.
    case update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool = false, author: Author = .none)
    case delete(id: UUID, expectedRevision: UInt64?, author: Author = .none)
    /// For a live memo: makes its content that of its kept version `revision` (an update, version kind `restore`;
    /// `revision` is then required). For a memo in the trash: brings it back under its id with its last content,
    /// or that of version `revision` when given (a create, version kind `restore`). Guarded by `expectedRevision`
    /// (the live memo's revision, or the delete's for a memo in the trash).
    case restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?, author: Author = .none)

    /// The memo the write is about.
    public var id: UUID {
        switch self {
        case .create(let id, _, _, _, _), .update(let id, _, _, _, _), .delete(let id, _, _), .restore(let id, _, _, _):
            return id
        }
    }

    /// The write's author.
    public var author: Author {
        switch self {
        case .create(_, _, _, _, let author), .update(_, _, _, _, let author), .delete(_, _, let author),
             .restore(_, _, _, let author):
            return author
        }
    }

    /// Whether planning the write may read a kept version or the trash: a restore, or an update that may merge.
    public var readsVersions: Bool {
        switch self {
        case .restore: return true
        case .update(_, _, _, let merge, _): return merge
        case .create, .delete: return false
        }
    }

    /// Checks what can be checked without the store, in the order the planner checks it: the content's size,
    /// then a create's dates (`MemoDates`). A server calls it before handing the write to any store, so that no
    /// store (PostgreSQL's included) ever sees a date out of the range.
    public func validateArguments() throws(MemoError) {
        switch self {
        case .create(_, let content, let insertMicros, let updateMicros, _):
            try MemoLimits.validate(content: content)
            try MemoDates.validate(insertMicros: insertMicros, updateMicros: updateMicros)
        case .update(_, let content, _, _, _):
            try MemoLimits.validate(content: content)
        case .delete, .restore:
            break
        }
    }
}

/// What planning a write gave.
public enum WriteOutcome: Sendable, Hashable {
    /// The write changes the store.
    case change(Change)
    /// A create that repeats an existing memo (same id, same content): nothing changes.
    case existing(Memo)

    public var memo: Memo {
        switch self {
        case .change(let change): return change.memo
        case .existing(let memo): return memo
        }
    }
}

/// The memos of a store, in memory, ordered newest first by insert date. Both stores keep one; the SQLite store
/// also writes every change to disk before it is applied here.
///
/// Each memo lives once, in a slot of one array; the id index (`SlotIndex`) and the order hold 32-bit slot
/// numbers. A million memos cost their contents plus about 76 bytes each (56 in the slot, 16 in the index, 4 in
/// the order; a dictionary of whole memos and an order of (date, id) keys were about 170), and the list is read
/// from the order without hashing.
public struct MemoTable: Sendable {
    struct Key: Comparable, Hashable {
        var insert: Int64
        var id: UUID

        static func < (a: Key, b: Key) -> Bool {
            if a.insert != b.insert { return a.insert < b.insert }
            return a.id.orderingValue < b.id.orderingValue
        }
    }

    /// Every memo, by slot; a freed slot holds `Self.vacant` until it is reused.
    private var slots: [Memo] = []
    private var freeSlots: [Int32] = []
    private var byID = SlotIndex()
    /// Slots ascending by (insert date, id); the list is this order reversed.
    private var order: [Int32] = []
    /// The revision of the last change applied.
    public private(set) var revision: UInt64

    private static let vacant = Memo(
        id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), content: "", insertMicros: 0,
        updateMicros: 0, revision: 0)

    public init(revision: UInt64 = 0) {
        self.revision = revision
    }

    /// Builds a table from stored memos (any order).
    public init(memos: [Memo], revision: UInt64) {
        self.revision = revision
        var index = SlotIndex(capacity: memos.count)
        for slot in memos.indices { index.insert(Int32(slot), in: memos) }
        byID = index
        slots = memos
        order = Array(0..<Int32(slots.count))
        order.sort { [slots] in Self.key(slots[Int($0)]) < Self.key(slots[Int($1)]) }
    }

    private static func key(_ memo: Memo) -> Key { Key(insert: memo.insertMicros, id: memo.id) }

    public var count: Int { byID.count }

    /// Reads the id index where lookups of `ids` will start, all before any lookup: a batch's index reads are
    /// cache misses into an index of megabytes, and independent reads issued together are waited for together.
    /// The result means nothing; keep it (add it to a stored value) so that the reads are not left out.
    public func warmIndex(for ids: some Sequence<UUID>) -> UInt64 {
        var sum: UInt64 = 0
        for id in ids { sum &+= byID.firstBucket(of: id) }
        return sum
    }

    public func memo(_ id: UUID) -> Memo? {
        guard let slot = byID.slot(of: id, in: slots) else { return nil }
        return slots[Int(slot)]
    }

    /// Every memo, newest first.
    public var list: [Memo] { order.reversed().map { slots[Int($0)] } }

    /// Applies a change planned against this table.
    public mutating func apply(_ change: Change) {
        precondition(change.revision == revision + 1, "changes must be applied in revision order")
        revision = change.revision
        let memo = change.memo
        let key = Self.key(memo)
        switch change.kind {
        case .created:
            let slot: Int32
            if let free = freeSlots.popLast() {
                slot = free
                slots[Int(slot)] = memo
            } else {
                slot = Int32(slots.count)
                slots.append(memo)
            }
            byID.insert(slot, in: slots)
            if order.isEmpty || Self.key(slots[Int(order[order.count - 1])]) < key {
                order.append(slot)  // the common case: the newest memo
            } else {
                order.insert(slot, at: insertionIndex(of: key))
            }
        case .updated:
            guard let slot = byID.slot(of: memo.id, in: slots) else { return }
            slots[Int(slot)] = memo
        case .deleted:
            guard let slot = byID.remove(memo.id, in: slots) else { return }
            let index = insertionIndex(of: Self.key(slots[Int(slot)]))
            if index < order.count, order[index] == slot { order.remove(at: index) }
            slots[Int(slot)] = Self.vacant  // frees the content now, not when the slot is reused
            freeSlots.append(slot)
        }
    }

    /// At most `limit` memos (0: no limit) listed after `cursor` (from the first when nil), newest first, and
    /// whether more follow them. O(log N + limit): a binary search in the order, then a walk down it.
    public func page(after cursor: ListCursor?, limit: Int) -> (memos: [Memo], more: Bool) {
        // Everything below `end` in the ascending order is listed after the cursor.
        let end = cursor.map { insertionIndex(of: Key(insert: $0.insertMicros, id: $0.id)) } ?? order.count
        let count = limit > 0 ? min(limit, end) : end
        var memos: [Memo] = []
        memos.reserveCapacity(count)
        var index = end
        while memos.count < count {
            index -= 1
            memos.append(slots[Int(order[index])])
        }
        return (memos, index > 0)
    }

    /// The latest insert date of a memo that is not after `bound` (0 when there is none). O(log N).
    public func latestInsert(notAfter bound: Int64) -> Int64 {
        var low = 0
        var high = order.count
        while low < high {
            let mid = (low + high) / 2
            if slots[Int(order[mid])].insertMicros <= bound { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? 0 : slots[Int(order[low - 1])].insertMicros
    }

    /// How many memos of the table come before `memo` in the list (newest first): its position when it is listed,
    /// the position it would take when it is not. O(log N).
    public func countNewer(than memo: Memo) -> Int {
        let key = Self.key(memo)
        var index = insertionIndex(of: key)
        if index < order.count, Self.key(slots[Int(order[index])]) == key { index += 1 }
        return order.count - index
    }

    /// The first index whose key is not less than `key`.
    private func insertionIndex(of key: Key) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let mid = (low + high) / 2
            if Self.key(slots[Int(order[mid])]) < key { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

/// Plans a batch of writes against a table without changing it, so that a store can make them durable first.
/// Writes later in a batch see the effects of earlier ones through an overlay.
public struct WritePlanner {
    private var overlay: [UUIDKey: Memo?] = [:]
    /// The changes planned so far in this batch, for a restore of a version (or a trash entry) the batch made.
    private var planned: [Change] = []
    public private(set) var revision: UInt64
    /// The insert clock: the latest insert date this store handed out to a create without one. Dates a client
    /// gives (an import, a future date) never move it, so they cannot shift later dates or overflow it.
    public private(set) var lastInsertMicros: Int64
    /// False when the caller applies each planned change to the table before planning the next, so that the
    /// table itself shows earlier effects and no overlay is needed.
    private let keepsOverlay: Bool
    /// False when no write of the batch reads `planned` (`WriteOp.readsVersions`): each change is then not copied
    /// into it (its retains, and the array's teardown, were ~5% of a create's instructions in the memory store).
    private let keepsPlanned: Bool

    /// - Parameters:
    ///   - lastInsertMicros: the insert clock (see `lastInsertMicros`), kept by the caller between batches.
    ///   - appliesAsItGoes: true when each planned change is applied to `table` before the next plan.
    ///   - readsVersions: false when the caller knows no write of the batch reads kept versions or the trash
    ///     (`WriteOp.readsVersions`), which the planner would otherwise look for among the batch's earlier changes.
    public init(
        startingAt table: borrowing MemoTable, lastInsertMicros: Int64, appliesAsItGoes: Bool = false,
        readsVersions: Bool = true
    ) {
        revision = table.revision
        self.lastInsertMicros = lastInsertMicros
        keepsOverlay = !appliesAsItGoes
        keepsPlanned = readsVersions
    }

    private func current(_ id: UUID, in table: borrowing MemoTable) -> Memo? {
        if keepsOverlay, let entry = overlay[UUIDKey(id)] { return entry }
        return table.memo(id)
    }

    /// The memo an update or a delete changes, checked against the revision the writer expects, with the next
    /// revision taken for the change.
    private mutating func changing(
        _ id: UUID, expected: UInt64?, in table: borrowing MemoTable
    ) throws(MemoError) -> Memo {
        guard var memo = current(id, in: table) else { throw .notFound(id) }
        if let expected, expected != memo.revision {
            throw .conflict(id: id, expected: expected, actual: memo.revision)
        }
        revision += 1
        memo.revision = revision
        return memo
    }

    private mutating func record(_ id: UUID, _ memo: Memo?) {
        if keepsOverlay { overlay[UUIDKey(id)] = .some(memo) }
    }

    /// Records a planned change and returns its outcome.
    private mutating func made(_ change: Change) -> WriteOutcome {
        if keepsPlanned { planned.append(change) }
        return .change(change)
    }

    /// The version `revision` of memo `id`: made earlier in this batch, or kept by the store.
    private func version(_ id: UUID, _ revision: UInt64, _ lookup: VersionLookup) -> MemoVersion? {
        if let change = planned.last(where: { $0.revision == revision }) {
            guard change.memo.id == id, let kind = change.versionKind else { return nil }
            let memo = change.memo
            return MemoVersion(
                id: id, revision: revision, kind: kind, micros: memo.updateMicros, author: memo.author,
                content: memo.content)
        }
        return lookup.version(id, revision)
    }

    /// The trash entry of memo `id`: a delete earlier in this batch, or the store's.
    private func trashed(_ id: UUID, _ lookup: VersionLookup) -> TrashEntry? {
        if let change = planned.last(where: { $0.memo.id == id }) {
            guard change.kind == .deleted else { return nil }
            return TrashEntry(
                memo: change.memo, revision: change.revision, deletedMicros: change.memo.updateMicros,
                deletedBy: change.memo.author)
        }
        return lookup.trashed(id)
    }

    /// Plans one write.
    /// - Parameters:
    ///   - nowMicros: the time of the write, microseconds since the Unix epoch.
    /// - Throws: `MemoError` for a write that must not happen (not found, conflict, content too large, a date out
    ///   of `MemoDates`' range or an update date before the insert date).
    ///
    /// A create without an insert date gets the insert clock's next date: now, or a microsecond after the last
    /// one it gave when that is not before now. An update or a delete is dated now, or at the memo's insert date
    /// when that is still in the future, so that no memo's update date is before its insert date (an export of
    /// it must import again).
    ///   - lookup: the store's kept versions and trash, for a restore.
    ///
    /// `op` is taken owned and its content and author move into the memo: borrowed, each was copied out of it (its
    /// strings retained) and released again with the op.
    public mutating func plan(
        _ op: consuming WriteOp, in table: borrowing MemoTable, nowMicros: Int64, lookup: VersionLookup = .none
    ) throws(MemoError) -> WriteOutcome {
        try op.validateArguments()
        switch consume op {
        case .create(let id, let content, let insertMicros, let updateMicros, let author):
            if let existing = current(id, in: table) {
                // Bytes, not `==`: an NFD retry of an NFC memo is other content, hence a conflict.
                if existing.content.hasSameBytes(as: content) { return .existing(existing) }
                throw .conflict(id: id, expected: nil, actual: existing.revision)
            }
            let insert: Int64
            if let insertMicros {
                insert = insertMicros
            } else {
                // The clock never passes the last valid date, so the step cannot overflow.
                insert = max(nowMicros, min(lastInsertMicros, MemoDates.latestMicros - 1) + 1)
            }
            let update = updateMicros ?? max(nowMicros, insert)
            try MemoDates.validate(insertMicros: insert, updateMicros: update)
            if insertMicros == nil { lastInsertMicros = insert }
            revision += 1
            let memo = Memo(
                id: id, content: content, insertMicros: insert, updateMicros: update, revision: revision,
                author: author)
            record(id, memo)
            return made(Change(revision: revision, kind: .created, memo: memo))
        case .update(let id, var content, let expected, let merge, let author):
            // A stale update that asks to be merged is, when the version it started from is still kept and its
            // lines merge with the ones changed since (`StaleUpdate`), an ordinary update of the merged text
            // guarded by the current revision; otherwise it is the conflict it was.
            var guarded = expected
            if merge, let expected, let live = current(id, in: table), live.revision != expected,
                let base = version(id, expected, lookup),
                let merged = StaleUpdate.merged(base: base.content, current: live.content, update: content)
            {
                // The memo already reads as the merge (an update resent after its answer was lost, or the same
                // edit made on both sides): nothing to write, the memo as it is is the answer.
                if merged.hasSameBytes(as: live.content) { return .existing(live) }
                content = merged
                guarded = live.revision
            }
            var memo = try changing(id, expected: guarded, in: table)
            memo.content = content
            memo.updateMicros = max(nowMicros, memo.insertMicros)
            memo.author = author
            record(id, memo)
            return made(Change(revision: revision, kind: .updated, memo: memo))
        case .delete(let id, let expected, let author):
            var memo = try changing(id, expected: expected, in: table)
            // A delete's change carries when it happened, so that a watcher can say when a memo went away.
            memo.updateMicros = max(nowMicros, memo.insertMicros)
            memo.author = author
            record(id, nil)
            return made(Change(revision: revision, kind: .deleted, memo: memo))
        case .restore(let id, let wanted, let expected, let author):
            return try planRestore(id, wanted, expected, author, in: table, nowMicros: nowMicros, lookup: lookup)
        }
    }

    private mutating func planRestore(
        _ id: UUID, _ wanted: UInt64?, _ expected: UInt64?, _ author: Author, in table: borrowing MemoTable,
        nowMicros: Int64, lookup: VersionLookup
    ) throws(MemoError) -> WriteOutcome {
        if let live = current(id, in: table) {
            guard let wanted else {
                throw .invalidArgument("memo \(id.lowercasedString) is not deleted: name the revision to restore")
            }
            if let expected, expected != live.revision {
                throw .conflict(id: id, expected: expected, actual: live.revision)
            }
            guard let version = version(id, wanted, lookup) else {
                throw .versionNotFound(id: id, reason: Self.notKept(wanted))
            }
            var memo = try changing(id, expected: expected, in: table)
            memo.content = version.content
            memo.updateMicros = max(nowMicros, memo.insertMicros)
            memo.author = author
            record(id, memo)
            return made(Change(revision: revision, kind: .updated, memo: memo, restored: true))
        }
        guard let entry = trashed(id, lookup) else {
            throw .versionNotFound(id: id, reason: Self.notInTrash)
        }
        if let expected, expected != entry.revision {
            throw .conflict(id: id, expected: expected, actual: entry.revision)
        }
        var content = entry.memo.content
        if let wanted {
            guard let version = version(id, wanted, lookup) else {
                throw .versionNotFound(id: id, reason: Self.notKept(wanted))
            }
            content = version.content
        }
        // Back under its id and at its place in the list (its insert date), as a create of its own revision.
        let update = max(nowMicros, entry.memo.insertMicros)
        revision += 1
        let memo = Memo(
            id: id, content: content, insertMicros: entry.memo.insertMicros, updateMicros: update,
            revision: revision, author: author)
        record(id, memo)
        return made(Change(revision: revision, kind: .created, memo: memo, restored: true))
    }

    /// The reason a restore of a version that is not kept fails with (every store's words).
    public static func notKept(_ revision: UInt64) -> String {
        "version \(revision) not found: not a version of this memo, or no longer kept (purged)"
    }

    /// The reason a restore of a memo that is neither live nor in the trash fails with.
    public static let notInTrash = "not found: not a memo, and not in the trash (never made, or purged)"
}

extension UUID {
    /// The UUID's 16 bytes as one big-endian number, for a total order that is the same on every platform.
    var orderingValue: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid) { raw in
            (UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}
