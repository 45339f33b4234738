import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import Testing

/// The list's incremental filter (cached lowercased bytes, narrowing the last result while the filter grows)
/// against the straightforward answer: every memo, lowercased, searched by bytes.
@Suite("TUI list filter: incremental result equals the full search")
@FrontEnd
struct ListFilterTests {
    /// Contents that differ in case, script and normal form: NFC "é" and NFD "e + U+0301" are other bytes.
    static let words = [
        "RxSwift", "rxswift", "메모", "장보기", "café", "cafe\u{301}", "STRASSE", "straße", "ΣΟΦΊΑ", "σοφία",
        "memo 12", "Memo 123", "한글 메모 12", "e\u{301}", "é", "ab", "AB",
    ]

    static func expected(_ memos: [Memo], _ filter: String) -> [Memo] {
        let needle = Array(filter.lowercased().utf8)
        guard !needle.isEmpty else { return memos }
        return memos.filter { memo in
            let hay = Array(memo.content.lowercased().utf8)
            guard hay.count >= needle.count else { return false }
            return (0...(hay.count - needle.count)).contains { hay[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
    }

    @Test func nfcAndNfdAreMatchedByTheirBytes() async {
        let store = TUIFixtures.store(["café NFC", "cafe\u{301} NFD", "메모"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        list.beginFilter()
        for character in "é" { list.editFilter { $0.insert(character) } }
        #expect(list.current.visible.map(\.content) == ["café NFC"])
        list.clearFilter()
        list.editFilter { $0.insert("\u{301}") }
        #expect(list.current.visible.map(\.content) == ["cafe\u{301} NFD"])
        list.close()
    }

    @Test(arguments: [1, 2, 3, 4])
    func randomChangesAndFiltersGiveTheFullSearchResult(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let store = MemoryStore()
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        defer { list.close() }
        var ids: [UUID] = []
        list.beginFilter()
        for step in 0..<400 {
            switch random.next() % 8 {
            case 0, 1, 2:
                // Insert dates spread over the past, so that creates land in the middle of the list too.
                let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(random.next() % 100_000))
                let content = Self.content(&random)
                ids.append(try await store.create(content: content, id: nil, insertDate: date).id)
            case 3 where !ids.isEmpty:
                let id = ids[Int(random.next() % UInt64(ids.count))]
                _ = try await store.update(id: id, content: Self.content(&random), expectedRevision: nil)
                await FrontEnd.drained()
            case 4 where !ids.isEmpty:
                let id = ids.remove(at: Int(random.next() % UInt64(ids.count)))
                _ = try await store.delete(id: id, expectedRevision: nil)
                await FrontEnd.drained()
            case 5:
                let word = Self.words[Int(random.next() % UInt64(Self.words.count))]
                let character = word[word.index(word.startIndex, offsetBy: Int(random.next() % UInt64(word.count)))]
                list.editFilter { $0.insert(character) }
            case 6:
                list.editFilter { $0.backspace() }
            default:
                if random.next() % 4 == 0 { list.clearFilter(); list.beginFilter() }
            }
            let state = list.current
            let all = try #require(store.memoList().value)
            #expect(state.memos == all, "step \(step)")
            #expect(state.visible == Self.expected(all, state.filter.text), "step \(step): '\(state.filter.text)'")
            if let selected = state.selectedID {
                #expect(state.visible.contains { $0.id == selected }, "step \(step)")
            } else {
                #expect(state.visible.isEmpty, "step \(step)")
            }
        }
    }

    static func content(_ random: inout SeededGenerator) -> String {
        (0..<(1 + Int(random.next() % 3))).map { _ in words[Int(random.next() % UInt64(words.count))] }
            .joined(separator: " ")
    }
}
