import Foundation
import MemoModel
import StoreTestSupport
import Testing

@Suite("List pages: the list cut after a cursor, the same from every store")
struct ListPageTests {
    /// Memos with insert dates that repeat (so that the id decides the order among equals), some in the future.
    private func fill(_ store: any ServingStore, count: Int) async throws -> [Memo] {
        var made: [Memo] = []
        for index in 0..<count {
            let date = Date(unixMicros: 1_700_000_000_000_000 + Int64(index / 3) * 1_000)
            made.append(try await store.create(content: "memo \(index)", id: UUID(), insertDate: date))
        }
        return made
    }

    @Test(arguments: StoreKind.allCases)
    func pagingThroughTheListGivesEachMemoOnceInListOrder(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        _ = try await fill(store, count: 50)
        let list = try #require(store.memoList().value)
        var paged: [Memo] = []
        var cursor: ListCursor?
        var pages = 0
        while true {
            let page = store.page(after: cursor, limit: 7)
            #expect(page.revision == 50)
            paged += page.memos
            pages += 1
            guard let next = page.next else {
                #expect(!page.more)
                break
            }
            cursor = next
        }
        #expect(paged.map(\.id) == list.map(\.id))
        #expect(pages == 8)  // 7 full pages and one of 1
        #expect(store.page(after: nil, limit: 0).memos.map(\.id) == list.map(\.id))
        #expect(store.page(after: nil, limit: 50).more == false)
        #expect(store.page(after: nil, limit: 49).more == true)
    }

    @Test(arguments: StoreKind.allCases)
    func aCursorWhoseMemoWasDeletedStillStartsRightAfterItsPlace(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        _ = try await fill(store, count: 20)
        let first = store.page(after: nil, limit: 5)
        let cursor = try #require(first.next)
        let boundary = try #require(first.memos.last)
        try await store.delete(id: boundary.id, expectedRevision: nil)
        // Deleting the page's neighbours too: the next page starts at the first memo still listed after the place.
        let list = try #require(store.memoList().value)
        let rest = store.page(after: cursor, limit: 0).memos
        #expect(rest.map(\.id) == Array(list.dropFirst(4)).map(\.id))
        #expect(!rest.contains { $0.id == boundary.id })
        // A cursor the store never held (a made-up id at a date between two memos) is a place all the same.
        let made = ListCursor(insertMicros: list[10].insertMicros, id: list[10].id)
        #expect(store.page(after: made, limit: 3).memos.map(\.id) == list[11..<14].map(\.id))
    }

    @Test func theCursorTokenReadsBackAndRefusesAnythingElse() {
        let cursor = ListCursor(insertMicros: -2, id: UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!)
        #expect(cursor.token == "fffffffffffffffe0f1e2d3c4b5a69788796a5b4c3d2e1f0")
        #expect(ListCursor(token: cursor.token) == cursor)
        #expect(ListCursor(token: cursor.token.uppercased()) == cursor)
        #expect(ListCursor(token: String(cursor.token.dropLast())) == nil)
        #expect(ListCursor(token: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0") == nil)
        #expect(ListCursor(token: String(repeating: "g", count: 48)) == nil)
    }
}
