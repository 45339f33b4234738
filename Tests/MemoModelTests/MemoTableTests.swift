import Foundation
import MemoModel
import Testing

@Suite("MemoTable: one slot per memo, reused after a delete")
struct MemoTableTests {
    private func memo(_ content: String, insert: Int64, revision: UInt64) -> Memo {
        Memo(id: UUID(), content: content, insertMicros: insert, updateMicros: insert, revision: revision)
    }

    @Test func deletesFreeSlotsThatLaterCreatesReuseWithoutDisturbingTheOrder() {
        var table = MemoTable()
        let a = memo("a", insert: 10, revision: 1), b = memo("b", insert: 20, revision: 2)
        let c = memo("c", insert: 30, revision: 3)
        for (revision, item) in [a, b, c].enumerated() {
            table.apply(Change(revision: UInt64(revision + 1), kind: .created, memo: item))
        }
        table.apply(Change(revision: 4, kind: .deleted, memo: b))
        #expect(table.memo(b.id) == nil)
        #expect(table.list.map(\.content) == ["c", "a"])
        // An import older than everything, then a new memo: both take slots (one of them b's freed slot).
        let old = memo("old", insert: 5, revision: 5), new = memo("new", insert: 40, revision: 6)
        table.apply(Change(revision: 5, kind: .created, memo: old))
        table.apply(Change(revision: 6, kind: .created, memo: new))
        var edited = a
        edited.content = "a, edited"
        edited.revision = 7
        table.apply(Change(revision: 7, kind: .updated, memo: edited))
        #expect(table.list.map(\.content) == ["new", "c", "a, edited", "old"])
        #expect(table.count == 4)
        #expect(table.memo(old.id) == old)
        #expect(table.memo(a.id) == edited)
        table.apply(Change(revision: 8, kind: .deleted, memo: old))
        table.apply(Change(revision: 9, kind: .deleted, memo: new))
        #expect(table.list.map(\.content) == ["c", "a, edited"])
        #expect(MemoTable(memos: table.list.reversed(), revision: 9).list == table.list)
    }
}
