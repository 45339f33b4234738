import Foundation

/// `MemoTable`'s index from id to slot: open addressing with linear probing. Each bucket holds a 32-bit slot number
/// and the low 32 bits of its id's hash, the ids themselves read from the table's slots instead of being stored
/// again.
///
/// The hash bits decide most probes without reading the memo: a probe compares ids only when the bits match, so a
/// lookup of an id not in the index (every create's) reads no memo at all, and growing or removing finds an entry's
/// home from its bucket alone (growing read every memo's id, each a cache miss into the slots).
///
/// A dictionary of `UUIDKey` to `Int32` held 2M buckets of 20 bytes (and its metadata) for a million memos,
/// about 40 bytes per memo; these buckets are 8 bytes, kept at most half full: 16 bytes per memo. The hash is
/// `UUIDKey`'s, seeded at random per index, because ids are chosen by clients (see `UUIDKey`).
struct SlotIndex: Sendable {
    /// No entry: an entry's low half is a slot number, which is below 2^31.
    private static let empty = UInt64.max
    private var buckets: [UInt64] = []
    private var mask = 0
    private let seed: Int
    private(set) var count = 0

    /// Room for `capacity` entries without growing; `seed` is the hash's (tests choose it to make ids collide).
    init(capacity: Int = 0, seed: Int = Int.random(in: Int.min...Int.max)) {
        self.seed = seed
        if capacity > 0 { allocate(Self.bucketCount(for: capacity)) }
    }

    /// The smallest power of two at least twice `count` (and at least 16). Slot numbers are 32-bit, so there are
    /// at most 2^32 buckets and a home is within the 32 hash bits a bucket keeps.
    private static func bucketCount(for count: Int) -> Int {
        var buckets = 16
        while buckets < count * 2 { buckets <<= 1 }
        return buckets
    }

    private mutating func allocate(_ size: Int) {
        buckets = Array(repeating: Self.empty, count: size)
        mask = size - 1
    }

    /// The 32 hash bits a bucket keeps for `id`, in the high half.
    @inline(__always) private func tag(of id: UUID) -> UInt64 {
        UInt64(truncatingIfNeeded: UInt32(truncatingIfNeeded: UUIDKey(id)._rawHashValue(seed: seed))) << 32
    }

    @inline(__always) private func home(ofTag tag: UInt64) -> Int {
        Int(truncatingIfNeeded: tag >> 32) & mask
    }

    @inline(__always) private static func slot(_ entry: UInt64) -> Int32 {
        Int32(truncatingIfNeeded: entry)
    }

    /// The bucket holding `id`, if any.
    private func bucket(of id: UUID, in slots: [Memo]) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let tag = tag(of: id)
        var index = home(ofTag: tag)
        while true {
            let entry = buckets[index]
            if entry == Self.empty { return nil }
            if entry & 0xFFFF_FFFF_0000_0000 == tag && slots[Int(Self.slot(entry))].id == id { return index }
            index = (index + 1) & mask
        }
    }

    /// The bucket where a lookup of `id` starts, read and returned only so that the read is made: a batch reads
    /// each of its ids' first buckets in turn before looking any of them up, and the processor waits for those
    /// cache misses together instead of one after another (see `MemoTable.warmIndex(for:)`).
    func firstBucket(of id: UUID) -> UInt64 {
        buckets.isEmpty ? 0 : buckets[home(ofTag: tag(of: id))]
    }

    /// The slot of the memo with `id` in `slots`.
    func slot(of id: UUID, in slots: [Memo]) -> Int32? {
        bucket(of: id, in: slots).map { Self.slot(buckets[$0]) }
    }

    /// Adds `slot`, whose memo in `slots` has an id not yet in the index.
    mutating func insert(_ slot: Int32, in slots: [Memo]) {
        if (count + 1) * 2 > buckets.count {
            let old = buckets
            allocate(Self.bucketCount(for: count + 1))
            for entry in old where entry != Self.empty { place(entry) }
        }
        place(tag(of: slots[Int(slot)].id) | UInt64(UInt32(bitPattern: slot)))
        count += 1
    }

    private mutating func place(_ entry: UInt64) {
        var index = home(ofTag: entry)
        while buckets[index] != Self.empty { index = (index + 1) & mask }
        buckets[index] = entry
    }

    /// Removes the memo with `id` (still in `slots`) and returns its slot. Later entries of its run move back
    /// into the hole, so that no lookup has to skip deleted markers.
    mutating func remove(_ id: UUID, in slots: [Memo]) -> Int32? {
        guard var hole = bucket(of: id, in: slots) else { return nil }
        let removed = Self.slot(buckets[hole])
        var index = hole
        while true {
            index = (index + 1) & mask
            let entry = buckets[index]
            if entry == Self.empty { break }
            let wanted = home(ofTag: entry)
            // The entry may move to the hole unless its home lies cyclically in (hole, index].
            let staysPut = hole <= index ? (hole < wanted && wanted <= index) : (hole < wanted || wanted <= index)
            if !staysPut {
                buckets[hole] = entry
                hole = index
            }
        }
        buckets[hole] = Self.empty
        count -= 1
        return removed
    }
}
