import Foundation
@testable import MemoModel
import MemoTestSupport
import Testing

@Suite("SlotIndex: ids whose kept hash bits are equal are still told apart by their ids")
struct SlotIndexTests {
    private static let seed = 0x5EED

    /// Two different ids whose hashes share their low 32 bits under `seed`: the bits a bucket keeps, so both have
    /// the same home and only the ids tell them apart. A birthday search over seeded random ids (about 2^16 tries).
    private static func collidingIDs() -> (UUID, UUID) {
        var random = SeededGenerator(seed: 7)
        var seen: [UInt32: UUID] = [:]
        while true {
            let id = UUID(uuid: withUnsafeBytes(of: (random.next(), random.next())) { bytes in
                bytes.load(as: uuid_t.self)
            })
            let bits = UInt32(truncatingIfNeeded: UUIDKey(id)._rawHashValue(seed: seed))
            if let earlier = seen[bits], earlier != id { return (earlier, id) }
            seen[bits] = id
        }
    }

    private static func memo(_ id: UUID) -> Memo {
        Memo(id: id, content: "", insertMicros: 0, updateMicros: 0, revision: 1)
    }

    @Test func idsWithEqualKeptBitsAreFoundRemovedAndShiftedBack() {
        let (first, second) = Self.collidingIDs()
        let other = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        let slots = [Self.memo(first), Self.memo(second), Self.memo(other)]
        var index = SlotIndex(seed: Self.seed)
        for slot in slots.indices { index.insert(Int32(slot), in: slots) }
        #expect(index.slot(of: first, in: slots) == 0)
        #expect(index.slot(of: second, in: slots) == 1)
        #expect(index.slot(of: other, in: slots) == 2)

        // The second sits behind the first in their run; removing the first moves it back into the hole.
        #expect(index.remove(first, in: slots) == 0)
        #expect(index.slot(of: first, in: slots) == nil)
        #expect(index.slot(of: second, in: slots) == 1)
        #expect(index.remove(first, in: slots) == nil)
        #expect(index.count == 2)

        // Growth places entries from their kept bits alone: both colliding ids are still found after it.
        index.insert(0, in: slots)
        var grown = slots
        for number in 0..<40 {
            grown.append(Self.memo(UUID(uuid: (UInt8(number), 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1))))
            index.insert(Int32(grown.count - 1), in: grown)
        }
        #expect(index.slot(of: first, in: grown) == 0)
        #expect(index.slot(of: second, in: grown) == 1)
        #expect(index.count == 43)
    }
}
