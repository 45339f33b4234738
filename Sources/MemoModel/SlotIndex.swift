import Foundation

/// `MemoTable`'s index from id to slot: open addressing with linear probing over 32-bit slot numbers, the ids
/// themselves read from the table's slots instead of being stored again.
///
/// A dictionary of `UUIDKey` to `Int32` held 2M buckets of 20 bytes (and its metadata) for a million memos,
/// about 40 bytes per memo; these buckets are 4 bytes, kept at most half full: 8 bytes per memo. The hash is
/// `UUIDKey`'s, seeded at random per index, because ids are chosen by clients (see `UUIDKey`).
struct SlotIndex: Sendable {
    private static let empty: Int32 = -1
    private var buckets: [Int32] = []
    private var mask = 0
    private let seed = Int.random(in: Int.min...Int.max)
    private(set) var count = 0

    /// Room for `capacity` entries without growing.
    init(capacity: Int = 0) {
        if capacity > 0 { allocate(Self.bucketCount(for: capacity)) }
    }

    /// The smallest power of two at least twice `count` (and at least 16).
    private static func bucketCount(for count: Int) -> Int {
        var buckets = 16
        while buckets < count * 2 { buckets <<= 1 }
        return buckets
    }

    private mutating func allocate(_ size: Int) {
        buckets = Array(repeating: Self.empty, count: size)
        mask = size - 1
    }

    @inline(__always) private func home(of id: UUID) -> Int {
        UUIDKey(id)._rawHashValue(seed: seed) & mask
    }

    /// The bucket holding `id`, if any.
    private func bucket(of id: UUID, in slots: [Memo]) -> Int? {
        guard !buckets.isEmpty else { return nil }
        var index = home(of: id)
        while true {
            let slot = buckets[index]
            if slot == Self.empty { return nil }
            if slots[Int(slot)].id == id { return index }
            index = (index + 1) & mask
        }
    }

    /// The slot of the memo with `id` in `slots`.
    func slot(of id: UUID, in slots: [Memo]) -> Int32? {
        bucket(of: id, in: slots).map { buckets[$0] }
    }

    /// Adds `slot`, whose memo in `slots` has an id not yet in the index.
    mutating func insert(_ slot: Int32, in slots: [Memo]) {
        if (count + 1) * 2 > buckets.count {
            let old = buckets
            allocate(Self.bucketCount(for: count + 1))
            for entry in old where entry != Self.empty { place(entry, in: slots) }
        }
        place(slot, in: slots)
        count += 1
    }

    private mutating func place(_ slot: Int32, in slots: [Memo]) {
        var index = home(of: slots[Int(slot)].id)
        while buckets[index] != Self.empty { index = (index + 1) & mask }
        buckets[index] = slot
    }

    /// Removes the memo with `id` (still in `slots`) and returns its slot. Later entries of its run move back
    /// into the hole, so that no lookup has to skip deleted markers.
    mutating func remove(_ id: UUID, in slots: [Memo]) -> Int32? {
        guard var hole = bucket(of: id, in: slots) else { return nil }
        let removed = buckets[hole]
        var index = hole
        while true {
            index = (index + 1) & mask
            let slot = buckets[index]
            if slot == Self.empty { break }
            let wanted = home(of: slots[Int(slot)].id)
            // The entry may move to the hole unless its home lies cyclically in (hole, index].
            let staysPut = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
            if !staysPut {
                buckets[hole] = slot
                hole = index
            }
        }
        buckets[hole] = Self.empty
        count -= 1
        return removed
    }
}
