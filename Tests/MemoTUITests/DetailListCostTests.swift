import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoTestSupport
import MemoViewModels
import ServerTestSupport
import Testing

/// The whole-list subject of a real `RemoteStore` costs O(N) per change only while someone holds a subscription
/// to it: the detail scene never asks for it, and a subscription dropped without `cancel` stops.
@Suite("RemoteStore's whole list: built only while subscribed, never for the detail scene")
@FrontEnd
struct DetailListCostTests {
    @Test func aFailedDeleteInTheDetailDoesNotMakeLaterChangesRebuildTheWholeList() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let kept = try await server.store.create(content: "지울 수 없는 메모", id: nil, insertDate: nil)
        // A read-only certificate: the delete is refused.
        let client = try await MemoConnection.connect(server.clientConfiguration("reader"))
        defer { client.close() }
        let store = try RemoteStore(client: client)
        try await store.waitUntilFresh()
        let detail = DetailViewModel(memoID: kept.id, storage: store, dateFormat: TUIFixtures.utcKorean)
        defer { detail.close() }
        _ = try await firstValue(of: detail.state, "the memo on the detail", seconds: 60) { $0.memo?.id == kept.id }
        let builds = store.wholeListBuilds

        detail.requestDelete()
        await detail.answerDelete(true)?.value
        #expect(detail.current.message != nil)
        #expect(!detail.current.isGone)

        // A later change, applied by the mirror: the whole list is not built for it.
        let later = try await server.store.create(content: "나중의 변경", id: nil, insertDate: nil)
        #expect(try await offThePool { pollUntil { store.contains(id: later.id) } }, "the mirror has the later change")
        #expect(store.wholeListBuilds == builds)
    }

    @Test func aListSubscriptionDroppedWithoutCancelStopsTheRebuilds() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let store = try RemoteStore(client: client)
        try await store.waitUntilFresh()
        let seen = Recorder<[Memo]>()
        var held: Subscription? = store.memoList().subscribe { seen.record($0) }
        let first = try await server.store.create(content: "구독 중", id: nil, insertDate: nil)
        let heldHasIt = try await offThePool { pollUntil { seen.values.last?.first?.id == first.id } }
        #expect(heldHasIt, "the held list has the change")
        let builds = store.wholeListBuilds

        held = nil
        _ = held
        let second = try await server.store.create(content: "구독 끝", id: nil, insertDate: nil)
        #expect(try await offThePool { pollUntil { store.contains(id: second.id) } }, "the mirror has the change")
        #expect(store.wholeListBuilds == builds)
        #expect(seen.values.last?.first?.id == first.id)
        // Asked again, it is built once, now.
        #expect(store.memoList().value?.first?.id == second.id)
        #expect(store.wholeListBuilds == builds + 1)
    }
}
