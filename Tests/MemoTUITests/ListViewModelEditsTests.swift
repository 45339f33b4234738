import Foundation
import MemoClient
import MemoCore
import MemoTestSupport
import MemoTUI
import MemoViewModels
import Synchronization
import Testing

/// The list view model fed position edits: by the memory store, by the real mirror of a server, and while a
/// newer keystroke supersedes the filtering of an older one.
@Suite("TUI list view model: position edits, the real mirror, superseded keystrokes")
struct ListViewModelEditsTests {
    @Test func aSupersededKeystrokesSearchIsAbandonedAndTheNextSettlesIt() {
        let store = TUIFixtures.store(["apple", "banana", "cherry", "apricot"])
        let newerKeyWaiting = Flag()
        let list = ListViewModel(storage: store, superseded: { newerKeyWaiting.value.load(ordering: .relaxed) })
        defer { list.close() }
        let everything = list.current.visible.map(\.content)
        #expect(everything.count == 4)
        list.beginFilter()
        newerKeyWaiting.value.store(true, ordering: .relaxed)
        list.editFilter { $0.insert("a") }
        list.editFilter { $0.insert("p") }
        // The text follows every key; the search gave way to the newer key each time.
        #expect(list.current.filter.text == "ap")
        #expect(list.current.visible.map(\.content) == everything)
        newerKeyWaiting.value.store(false, ordering: .relaxed)
        list.settleFilter()
        #expect(list.current.visible.map(\.content) == ["apricot", "apple"])
        // With no newer key the search finishes at once, narrowing the last result.
        list.editFilter { $0.insert("r") }
        #expect(list.current.visible.map(\.content) == ["apricot"])
        #expect(list.current.selectedMemo?.content == "apricot")
    }

    @Test func anActionAfterAnAbandonedSearchSeesTheSettledFilter() {
        let store = TUIFixtures.store(["apple", "banana", "cherry"])
        let newerKeyWaiting = Flag()
        let list = ListViewModel(storage: store, superseded: { newerKeyWaiting.value.load(ordering: .relaxed) })
        defer { list.close() }
        list.beginFilter()
        newerKeyWaiting.value.store(true, ordering: .relaxed)
        list.editFilter { $0.insert("n") }
        newerKeyWaiting.value.store(false, ordering: .relaxed)
        list.commitFilter()
        #expect(list.current.visible.map(\.content) == ["banana"])
        #expect(list.current.selectedMemo?.content == "banana")
    }

    @Test func aRemoteChangeIsAppliedWhereItBelongsAndTheSelectionStays() async throws {
        let store = TUIFixtures.store(["one", "two", "three"])
        let list = ListViewModel(storage: store)
        defer { list.close() }
        list.moveDown()
        let selected = try #require(list.current.selectedMemo)
        let old = Date(timeIntervalSince1970: 1)
        _ = try await store.create(content: "oldest", id: nil, insertDate: old)
        _ = try await store.create(content: "newest", id: nil, insertDate: nil)
        #expect(list.current.visible == store.snapshot().memos)
        #expect(list.current.selectedID == selected.id)
        // Deleting the selected memo selects the one that followed it.
        let index = try #require(list.current.selectedIndex)
        let next = list.current.visible[index + 1]
        _ = try await store.delete(id: selected.id, expectedRevision: nil)
        #expect(list.current.selectedID == next.id)
        #expect(list.current.visible == store.snapshot().memos)
    }

    @Test func theListFollowsTheRealMirrorOfAServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for index in 0..<50 { _ = try await server.store.create(content: "memo \(index)", id: nil, insertDate: nil) }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let remote = try RemoteStore(client: client)
        let list = ListViewModel(storage: remote)
        defer { list.close() }
        list.beginFilter()
        list.editFilter { $0.insert("1") }
        // Writes from another client, and from this one (shown pending first, then confirmed).
        let writer = try await MemoConnection.connect(server.clientConfiguration())
        defer { writer.close() }
        let edited = try await writer.create(content: "memo 100")
        _ = try await writer.update(id: edited.id, content: "memo 101", expectedRevision: nil)
        let mine = try await remote.create(content: "mine 1", id: nil, insertDate: nil)
        let gone = try #require(server.store.snapshot().memos.last)
        _ = try await writer.delete(id: gone.id, expectedRevision: nil)
        _ = try await firstValue(of: list.state, "the list with every write") { state in
            state.memos.count == 51 && state.memos.first?.id == mine.id
                && !state.memos.contains { $0.id == gone.id } && state.memos.contains { $0.content == "memo 101" }
        }
        let expected = server.store.snapshot().memos
        #expect(list.current.memos == expected)
        #expect(list.current.visible == expected.filter { $0.content.contains("1") })
    }
}

/// A flag a test flips while the view model reads it from a closure.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

/// The executor hop: what the store delivers waits on the front end's queue, and runs there in order.
@Suite("TUI front-end executor: store deliveries run where the front end runs them")
struct FrontEndExecutorTests {
    @Test func theStoresEditsWaitForTheFrontEndAndApplyInOrder() async throws {
        let store = TUIFixtures.store(["one"])
        let queue = WorkQueue()
        let list = ListViewModel(storage: store, executor: FrontEndExecutor { queue.add($0) })
        defer { list.close() }
        // Even the first list waits for the front end.
        #expect(list.current.memos.isEmpty)
        queue.runAll()
        #expect(list.current.memos.map(\.content) == ["one"])
        let made = try await store.create(content: "two", id: nil, insertDate: nil)
        _ = try await store.update(id: made.id, content: "two, edited", expectedRevision: nil)
        // The store has answered; the view model has not been touched on the writer's thread.
        #expect(list.current.memos.map(\.content) == ["one"])
        #expect(queue.count == 2)
        queue.runAll()
        #expect(list.current.memos.map(\.content) == ["two, edited", "one"])
    }
}

/// A front end's queue that a test runs by hand.
private final class WorkQueue: Sendable {
    private let work = Mutex<[@Sendable () -> Void]>([])

    var count: Int { work.withLock { $0.count } }

    func add(_ item: @escaping @Sendable () -> Void) { work.withLock { $0.append(item) } }

    func runAll() {
        while let item = work.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { item() }
    }
}
