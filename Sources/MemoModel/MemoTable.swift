import Foundation

/// A write the stores know how to plan and apply.
public enum WriteOp: Sendable, Hashable {
    /// Creates a memo with this id, or returns the existing one when the id already holds the same content
    /// (the same UTF-8 bytes). The dates are kept when given (an import); `updateMicros` must not be before the
    /// insert date.
    case create(id: UUID, content: String, insertMicros: Int64?, updateMicros: Int64? = nil)
    case update(id: UUID, content: String, expectedRevision: UInt64?)
    case delete(id: UUID, expectedRevision: UInt64?)

    /// Checks what can be checked without the store, in the order the planner checks it: the content's size,
    /// then a create's dates (`MemoDates`). A server calls it before handing the write to any store, so that no
    /// store (PostgreSQL's included) ever sees a date out of the range.
    public func validateArguments() throws(MemoError) {
        switch self {
        case .create(_, let content, let insertMicros, let updateMicros):
            try MemoLimits.validate(content: content)
            try MemoDates.validate(insertMicros: insertMicros, updateMicros: updateMicros)
        case .update(_, let content, _):
            try MemoLimits.validate(content: content)
        case .delete:
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
/// numbers. A million memos cost their contents plus about 70 bytes each (56 in the slot, 8 in the index, 4 in
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
    public private(set) var revision: UInt64
    /// The insert clock: the latest insert date this store handed out to a create without one. Dates a client
    /// gives (an import, a future date) never move it, so they cannot shift later dates or overflow it.
    public private(set) var lastInsertMicros: Int64
    /// False when the caller applies each planned change to the table before planning the next, so that the
    /// table itself shows earlier effects and no overlay is needed.
    private let keepsOverlay: Bool

    /// - Parameters:
    ///   - lastInsertMicros: the insert clock (see `lastInsertMicros`), kept by the caller between batches.
    ///   - appliesAsItGoes: true when each planned change is applied to `table` before the next plan.
    public init(startingAt table: borrowing MemoTable, lastInsertMicros: Int64, appliesAsItGoes: Bool = false) {
        revision = table.revision
        self.lastInsertMicros = lastInsertMicros
        keepsOverlay = !appliesAsItGoes
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
    public mutating func plan(
        _ op: WriteOp, in table: borrowing MemoTable, nowMicros: Int64
    ) throws(MemoError) -> WriteOutcome {
        try op.validateArguments()
        switch op {
        case .create(let id, let content, let insertMicros, let updateMicros):
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
            let memo = Memo(id: id, content: content, insertMicros: insert, updateMicros: update, revision: revision)
            record(id, memo)
            return .change(Change(revision: revision, kind: .created, memo: memo))
        case .update(let id, let content, let expected):
            var memo = try changing(id, expected: expected, in: table)
            memo.content = content
            memo.updateMicros = max(nowMicros, memo.insertMicros)
            record(id, memo)
            return .change(Change(revision: revision, kind: .updated, memo: memo))
        case .delete(let id, let expected):
            var memo = try changing(id, expected: expected, in: table)
            // A delete's change carries when it happened, so that a watcher can say when a memo went away.
            memo.updateMicros = max(nowMicros, memo.insertMicros)
            record(id, nil)
            return .change(Change(revision: revision, kind: .deleted, memo: memo))
        }
    }
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
