import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import ServerTestSupport
import Synchronization
import Testing

/// The list view model fed position edits: by the memory store, by the real mirror of a server, and while a
/// newer keystroke supersedes the filtering of an older one.
@Suite("TUI list view model: position edits, the real mirror, superseded keystrokes")
@FrontEnd
struct ListViewModelEditsTests {
    @Test func aSupersededKeystrokesSearchIsAbandonedAndTheNextSettlesIt() async {
        let store = TUIFixtures.store(["apple", "banana", "cherry", "apricot"])
        let newerKeyWaiting = Flag()
        let list = ListViewModel(storage: store, superseded: { newerKeyWaiting.value.load(ordering: .relaxed) })
        await FrontEnd.drained()
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

    @Test func anActionAfterAnAbandonedSearchSeesTheSettledFilter() async {
        let store = TUIFixtures.store(["apple", "banana", "cherry"])
        let newerKeyWaiting = Flag()
        let list = ListViewModel(storage: store, superseded: { newerKeyWaiting.value.load(ordering: .relaxed) })
        await FrontEnd.drained()
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
        await FrontEnd.drained()
        defer { list.close() }
        list.moveDown()
        let selected = try #require(list.current.selectedMemo)
        let old = Date(timeIntervalSince1970: 1)
        _ = try await store.create(content: "oldest", id: nil, insertDate: old)
        await FrontEnd.drained()
        _ = try await store.create(content: "newest", id: nil, insertDate: nil)
        await FrontEnd.drained()
        #expect(list.current.visible == store.snapshot().memos)
        #expect(list.current.selectedID == selected.id)
        // Deleting the selected memo selects the one that followed it.
        let index = try #require(list.current.selectedIndex)
        let next = list.current.visible[index + 1]
        _ = try await store.delete(id: selected.id, expectedRevision: nil)
        await FrontEnd.drained()
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
        await FrontEnd.drained()
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

/// The hop: what the store delivers waits for the front end's loop, and runs there, in order.
@Suite("TUI front end: store deliveries hop onto the front end's loop, in order")
@FrontEnd
struct FrontEndExecutorTests {
    @Test func frontEndCodeRunsOnTheFrontEndsLoopThread() {
        #expect(FrontEnd.loop.inEventLoop)
    }

    @Test func aWriteFromAnotherThreadIsAppliedOnlyWhenTheFrontEndsLoopRunsIt() async throws {
        let store = TUIFixtures.store(["one"])
        let list = ListViewModel(storage: store)
        defer { list.close() }
        // Even the first list waits for the loop: nothing is applied on the caller's stack.
        #expect(list.current.memos.isEmpty)
        await FrontEnd.drained()
        #expect(list.current.memos.map(\.content) == ["one"])

        // A writer on another thread: the store answers there, and the view model changes only on the loop.
        let onLoop = Recorder<Bool>()
        let subscription = list.state.subscribe { _ in onLoop.record(FrontEnd.loop.inEventLoop) }
        defer { subscription.cancel() }
        try await Task.detached {
            let made = try await store.create(content: "two", id: nil, insertDate: nil)
            _ = try await store.update(id: made.id, content: "two, edited", expectedRevision: nil)
        }.value
        await FrontEnd.drained()
        #expect(list.current.memos.map(\.content) == ["two, edited", "one"])
        #expect(onLoop.values.count >= 3)
        #expect(onLoop.values.allSatisfy { $0 })
    }

    @Test func manyDeliveriesFromSeveralThreadsEndOnTheStoresOrder() async throws {
        let store = TUIFixtures.store([])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        defer { list.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for n in 0..<25 { _ = try await store.create(content: "w\(writer) \(n)", id: nil, insertDate: nil) }
                }
            }
            try await group.waitForAll()
        }
        await FrontEnd.drained()
        #expect(list.current.memos.map(\.id) == store.snapshot().memos.map(\.id))
        #expect(list.current.memos.count == 100)
    }
}
