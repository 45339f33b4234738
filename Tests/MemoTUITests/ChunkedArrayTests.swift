import Foundation
import MemoModel
import MemoTestSupport
@testable import MemoViewModels
import Testing

/// The list view model's chunked rows against a plain array, and the filter's shortcut for scripts without case.
@Suite("TUI chunked rows and case folding")
struct ChunkedArrayTests {
    @Test(arguments: [1, 2, 3])
    func randomInsertsAndRemovalsMatchAnArray(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var chunked = ChunkedArray<Int>(0..<3000)
        var plain = Array(0..<3000)
        for step in 0..<6000 {
            // More inserts than removals early on (chunks split), then more removals (chunks empty and go).
            let inserting = plain.isEmpty || random.next() % 10 < (step < 3000 ? 7 : 3)
            if inserting {
                // Runs at one place, as the newest memos go to the top, split chunks.
                let at = random.next() % 4 == 0 ? 0 : Int(random.next() % UInt64(plain.count + 1))
                plain.insert(step + 10_000, at: at)
                chunked.insert(step + 10_000, at: at)
            } else {
                let at = Int(random.next() % UInt64(plain.count))
                #expect(chunked.remove(at: at) == plain.remove(at: at))
            }
            if step % 500 == 0 {
                #expect(Array(chunked) == plain, "step \(step)")
                #expect(chunked.chunks.allSatisfy { !$0.isEmpty && $0.count <= 2 * ChunkedArray<Int>.chunkSize })
            }
        }
        #expect(Array(chunked) == plain)
        #expect((0..<plain.count).allSatisfy { chunked[$0] == plain[$0] })
        let sorted = ChunkedArray(plain.sorted())
        for probe in [-1, 0, 5000, 12_000, 20_000] {
            #expect(sorted.partitionIndex { $0 < probe } == plain.sorted().firstIndex { $0 >= probe } ?? plain.count)
        }
    }

    @Test(arguments: [0, 1, 1023, 1024, 1025, 2048, 3000])
    func chunksAndSlotsStartFromFullPagesOfTheElementsInOrder(count: Int) {
        let pages = (0..<count).pages(of: 1024)
        let last = count % 1024 == 0 ? [] : [count % 1024]
        #expect(pages.map(\.count) == Array(repeating: 1024, count: count / 1024) + last)
        #expect(pages.allSatisfy { $0.capacity >= 1024 })
        #expect(Array(pages.joined()) == Array(0..<count))
        let chunked = ChunkedArray(0..<count)
        #expect(chunked.chunks == pages && chunked.count == count)
    }

    @Test func theBlocksTakenAsCaselessHaveNoLowercaseMapping() {
        for range in [0xAC00...0xD7A3, 0x1100...0x11FF, 0x3000...0x30FF, 0x3130...0x318F, 0x4E00...0x9FFF] {
            for value in range {
                guard let scalar = Unicode.Scalar(value) else { continue }
                #expect(!scalar.properties.changesWhenLowercased, "U+\(String(value, radix: 16))")
            }
        }
    }

    @Test func aRowKeepsFoldedBytesOnlyWhenLowercasingChangesThem() {
        let texts = ["memo 12 메모", "Memo", "ΣΟΦΊΑ", "straße", "İ", "\u{212A}", "café", "日本語 かな"]
        for text in texts {
            let folded = ListFilter.fold(text)
            #expect(folded == Array(text.lowercased().utf8), "\(text)")
            let kept = ListFilter.foldIfNeeded(text)
            #expect(kept == (folded == Array(text.utf8) ? nil : folded), "\(text)")
        }
    }

    @Test func aRemovedMemosSlotIsTakenByTheNextMemoAddedAndItsContentLetGo() {
        func row(_ index: Int) -> ListRow {
            ListRow(Memo(id: UUID(), content: "memo \(index)", insertMicros: Int64(index), updateMicros: Int64(index),
                         revision: UInt64(index + 1)))
        }
        // More than a page, so that slots cross pages.
        var slots = RowSlots((0..<1500).map(row))
        #expect(slots.capacity == 1500)
        #expect(slots[1200].memo.content == "memo 1200")
        slots.remove(1200)
        slots.remove(7)
        #expect(slots[1200].memo.content.isEmpty && slots[7].memo.content.isEmpty)
        // Freed slots first (the last freed first), then new ones: a list with churn does not grow.
        #expect(slots.add(row(2000)) == 7)
        #expect(slots.add(row(2001)) == 1200)
        #expect(slots.add(row(2002)) == 1500)
        #expect(slots.capacity == 1501)
        #expect(slots[1200].memo.content == "memo 2001" && slots[1500].memo.content == "memo 2002")
        #expect(slots[0].memo.content == "memo 0" && slots[1499].memo.content == "memo 1499")
    }
}
