/// Values by request id, for what a connection has in flight: open addressing over a power-of-two array of slots,
/// the slot chosen by multiplying the id by an odd number (Fibonacci hashing) and keeping the top bits, linear
/// probing, and removal by shifting the entries after it back (no tombstones, so probes stay short however many
/// requests come and go).
///
/// It replaces a `Dictionary<UInt32, _>`, whose SipHash cost ~290 instructions per write (a probe on arrival and a
/// removal on the answer) under callgrind. The multiplier is random per table, so a client cannot choose ids that
/// all land in one run of slots; a client's ids are usually consecutive, which the product spreads evenly anyway.
/// At most half the slots are used; a table that never held anything has none (an idle connection pays nothing).
struct RequestIDTable<Value> {
    private struct Entry {
        var id: UInt32
        var value: Value
    }

    private var slots: [Entry?]
    /// log2 of `slots.count`.
    private var bits: UInt32
    private let multiplier: UInt32
    private(set) var count = 0

    init(multiplier: UInt32 = .random(in: .min ... .max)) {
        self.multiplier = multiplier | 1
        bits = 0
        slots = []
    }

    var isEmpty: Bool { count == 0 }

    /// The id's first slot: the product's top `bits` bits.
    @inline(__always)
    private func home(_ id: UInt32) -> Int {
        Int(truncatingIfNeeded: (id &* multiplier) &>> (32 - bits))
    }

    /// The slot holding `id`, or nil.
    @inline(__always)
    private func find(_ id: UInt32) -> Int? {
        guard count > 0 else { return nil }
        let mask = slots.count - 1
        var index = home(id)
        while let entry = slots[index] {
            if entry.id == id { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    func contains(_ id: UInt32) -> Bool { find(id) != nil }

    subscript(id: UInt32) -> Value? {
        guard let index = find(id) else { return nil }
        return slots[index]?.value
    }

    /// Adds `value` under `id`, which must not be in the table.
    mutating func insert(_ id: UInt32, _ value: Value) {
        if (count + 1) * 2 > slots.count { grow() }
        place(Entry(id: id, value: value))
        count += 1
    }

    private mutating func place(_ entry: Entry) {
        let mask = slots.count - 1
        var index = home(entry.id)
        while slots[index] != nil {
            precondition(slots[index]!.id != entry.id, "request id already in the table")
            index = (index + 1) & mask
        }
        slots[index] = entry
    }

    private mutating func grow() {
        let old = slots
        bits = old.isEmpty ? 4 : bits + 1
        slots = Array(repeating: nil, count: 1 << Int(bits))
        for case let entry? in old { place(entry) }
    }

    /// Removes the value under `id` and returns it (nil when there was none).
    @discardableResult
    mutating func removeValue(forKey id: UInt32) -> Value? {
        guard var hole = find(id) else { return nil }
        let mask = slots.count - 1
        let removed = slots[hole].take()!.value
        count -= 1
        // Each entry after the hole, up to the next empty slot, moves into the hole when the hole lies between its
        // home and where it is (cyclically): a probe for it would otherwise stop at the hole.
        var next = (hole + 1) & mask
        while let entry = slots[next] {
            if (next &- home(entry.id)) & mask >= (next &- hole) & mask {
                slots[hole] = slots[next].take()
                hole = next
            }
            next = (next + 1) & mask
        }
        return removed
    }
}
