import MemoTestSupport
import Testing

@testable import MemoServer

/// `RequestIDTable`, the session's writes in flight by request id, against a `Dictionary` doing the same.
@Suite struct RequestIDTableTests {
    /// Inserts and removes in random order (ids drawn from `ids`), checking every id's value after each step.
    private func agreesWithDictionary(multiplier: UInt32, ids: [UInt32], steps: Int, seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var table = RequestIDTable<Int>(multiplier: multiplier)
        var model: [UInt32: Int] = [:]
        for step in 0..<steps {
            let id = ids.randomElement(using: &generator)!
            if model[id] == nil {
                table.insert(id, step)
                model[id] = step
            } else {
                #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id))
            }
            #expect(table.count == model.count)
        }
        for id in ids {
            #expect(table[id] == model[id], "id \(id)")
            #expect(table.contains(id) == (model[id] != nil))
        }
        for (id, value) in model { #expect(table.removeValue(forKey: id) == value) }
        #expect(table.isEmpty)
        #expect(table.removeValue(forKey: ids[0]) == nil)
    }

    @Test func consecutiveIDsAreFoundAfterInsertsRemovalsAndGrowth() {
        agreesWithDictionary(multiplier: 0x9E37_79B1, ids: Array(100..<1_300), steps: 20_000, seed: 1)
    }

    @Test func collidingIDsAreFoundAfterRemovalsShiftTheirRuns() {
        // Multiplier 1: each id's home is its top bits, so ids that differ only in their low bits share one home
        // and form one long run, which every removal must close up behind it.
        agreesWithDictionary(multiplier: 1, ids: (0..<600).map { UInt32($0) }, steps: 10_000, seed: 2)
    }

    @Test func idsAtTheEndsOfTheRangeWrapAroundTheSlots() {
        let ids: [UInt32] = [0, 1, 2, .max, .max - 1, .max - 2, 1 << 31, (1 << 31) - 1, 0xFFFF_0000, 0x0000_FFFF]
        agreesWithDictionary(multiplier: 1, ids: ids, steps: 2_000, seed: 3)
        agreesWithDictionary(multiplier: 0x9E37_79B1, ids: ids, steps: 2_000, seed: 4)
    }

    @Test func anEmptyTableHoldsNoSlots() {
        let table = RequestIDTable<Int>()
        #expect(table.isEmpty)
        #expect(table[7] == nil)
        #expect(!table.contains(0))
    }
}
