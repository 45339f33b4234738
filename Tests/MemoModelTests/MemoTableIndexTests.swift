import Foundation
import MemoModel
import MemoTestSupport
import Testing

@Suite("MemoTable's id index: lookups stay right through creates, deletes and growth")
struct MemoTableIndexTests {
    @Test(arguments: [1 as UInt64, 2, 3])
    func randomCreatesAndDeletesAgreeWithADictionary(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var table = MemoTable(memos: (0..<100).map { Self.memo($0, revision: 0) }, revision: 0)
        var model: [UUID: Memo] = [:]
        for memo in table.list { model[memo.id] = memo }
        // The live ids in a fixed order, so that a seed picks the same victims every run (a dictionary's order
        // is not fixed); a delete swaps the last id into the victim's place.
        var live = table.list.map(\.id)
        var gone: [UUID] = []
        // Mostly creates, a third deletes: the index grows several times and deletes shift runs back.
        for step in 0..<6000 {
            let revision = table.revision + 1
            if !live.isEmpty, Int.random(in: 0..<3, using: &random) == 0 {
                let position = Int.random(in: 0..<live.count, using: &random)
                let victim = live[position]
                live.swapAt(position, live.count - 1)
                live.removeLast()
                guard var memo = model.removeValue(forKey: victim) else { continue }
                memo.revision = revision
                table.apply(Change(revision: revision, kind: .deleted, memo: memo))
                gone.append(victim)
            } else {
                let memo = Self.memo(100 + step, revision: revision)
                model[memo.id] = memo
                live.append(memo.id)
                table.apply(Change(revision: revision, kind: .created, memo: memo))
            }
        }
        #expect(table.count == model.count)
        for (id, memo) in model { #expect(table.memo(id) == memo) }
        for id in gone { #expect(table.memo(id) == nil) }
        #expect(table.memo(UUID()) == nil)
        #expect(Set(table.list) == Set(model.values))
    }

    private static func memo(_ number: Int, revision: UInt64) -> Memo {
        Memo(id: UUID(), content: "memo \(number)", insertMicros: Int64(number), updateMicros: Int64(number),
             revision: revision)
    }
}
