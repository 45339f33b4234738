import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoViewModels
import Synchronization
import Testing

/// A clock for stores that tests move by hand (minutes at a time), so that the trash's purge can be reached.
final class SteppedClock: Sendable {
    private let micros: Mutex<Int64>

    init(start: Int64 = TUIFixtures.baseMicros) { micros = Mutex(start) }

    /// One minute later than the call before.
    func next() -> Int64 {
        micros.withLock { value in
            value += 60_000_000
            return value
        }
    }

    func advance(days: Int) { micros.withLock { $0 += Int64(days) * 86_400_000_000 } }
}

@Suite("TUI history and trash: versions with their authors, difference, restore, live")
@FrontEnd
struct TUIHistoryTests {
    static let alice = Author(name: "alice", serial: "0A")
    static let bob = Author(name: "bob", serial: "0B")

    /// A store whose memo 1 ("장보기: 우유") was made by alice and edited by bob, with a coordinator on its list.
    private func started(
        clock: SteppedClock = SteppedClock(), versions: VersionPolicy = .standard, strings: Strings? = nil
    ) async throws -> (MemoryStore, SceneCoordinator) {
        let store = MemoryStore(clock: { clock.next() }, versions: versions)
        let id = TUIFixtures.id(1)
        let made = try await store.perform(.create(id: id, content: "장보기: 우유", insertMicros: nil, author: Self.alice))
        _ = try await store.perform(
            .update(id: id, content: "장보기: 우유\n계란", expectedRevision: made.revision, author: Self.bob))
        let coordinator = SceneCoordinator(
            storage: store, dateFormat: TUIFixtures.utcKorean, strings: strings, versions: StoreVersions(store))
        coordinator.start()
        await settle(coordinator)
        return (store, coordinator)
    }

    private func press(_ keys: [Key], _ coordinator: SceneCoordinator, status: ConnectionStatus = .local) async {
        for key in keys {
            _ = await SceneView.handle(key, model: coordinator.currentModel, status: status, width: 80, height: 24)
            await settle(coordinator)
        }
    }

    private func history(_ coordinator: SceneCoordinator) throws -> HistoryViewModel {
        guard case .history(let model) = coordinator.currentModel else {
            Issue.record("no history on screen: \(String(describing: coordinator.currentScene))")
            throw NavigationError.emptyStack
        }
        return model
    }

    private func trash(_ coordinator: SceneCoordinator) throws -> TrashViewModel {
        guard case .trash(let model) = coordinator.currentModel else {
            Issue.record("no trash on screen: \(String(describing: coordinator.currentScene))")
            throw NavigationError.emptyStack
        }
        return model
    }

    /// Waits (on the front end's loop) until `condition` holds, settling the scenes' tasks between looks.
    private func waitFor(
        _ what: String, _ coordinator: SceneCoordinator, _ condition: () throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                return
            }
            await settle(coordinator)
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func theDetailNamesWhoMadeTheLastChangeAndJustTheDateForAMemoFromBeforeAuthors() async throws {
        let (_, coordinator) = try await started()
        await press([.enter], coordinator)
        guard case .detail(let detail) = coordinator.currentModel else { throw NavigationError.emptyStack }
        let line = try #require(detail.current.contents.last)
        #expect(line.hasPrefix("리비전 2 · bob 수정 · "), "\(line)")
        let old = Memo(id: TUIFixtures.id(9), content: "옛 메모", insertMicros: 0, updateMicros: 0, revision: 4)
        let english = DetailViewModel.contents(of: old, dateFormat: TUIFixtures.utcKorean, strings: .english)
        #expect(english.last?.hasPrefix("revision 4 · updated ") == true)
        var edited = old
        edited.author = Self.alice
        let named = DetailViewModel.contents(of: edited, dateFormat: TUIFixtures.utcKorean, strings: .english)
        #expect(named.last?.hasPrefix("revision 4 · edited by alice · ") == true)
        coordinator.stop()
    }

    @Test func hShowsTheVersionsNewestFirstWithAuthorsAndEnterShowsOne() async throws {
        let (_, coordinator) = try await started()
        await press([.enter, .character("h")], coordinator)
        #expect(coordinator.currentScene == .history(TUIFixtures.id(1)))
        let model = try history(coordinator)
        #expect(model.current.versions.map(\.revision) == [2, 1])
        #expect(model.current.versions.map(\.author.name) == ["bob", "alice"])
        #expect(model.current.versions.map(\.kind) == [.update, .create])
        await press([.character("j"), .enter], coordinator)
        #expect(model.current.pane == .content)
        #expect(model.current.selectedVersion?.content == "장보기: 우유")
        // Esc goes back to the versions, then to the memo.
        await press([.escape], coordinator)
        #expect(model.current.pane == .versions)
        await press([.escape], coordinator)
        #expect(coordinator.currentScene == .detail(TUIFixtures.id(1)))
        coordinator.stop()
    }

    @Test func dMarksTheLinesRemovedAndAddedSinceTheVersionBefore() async throws {
        let (store, coordinator) = try await started()
        _ = try await store.perform(
            .update(id: TUIFixtures.id(1), content: "장보기: 두유\n빵\n계란", expectedRevision: 2, author: Self.alice))
        await press([.enter, .character("h")], coordinator)
        let model = try history(coordinator)
        await press([.character("d")], coordinator)
        #expect(model.current.pane == .difference)
        #expect(model.differenceLines == [
            DiffLine(.removed, "장보기: 우유"), DiffLine(.added, "장보기: 두유"), DiffLine(.added, "빵"),
            DiffLine(.same, "계란"),
        ])
        // The first version kept is all added.
        await press([.escape, .character("j"), .character("j"), .character("d")], coordinator)
        #expect(model.differenceLines == [DiffLine(.added, "장보기: 우유")])
        coordinator.stop()
    }

    @Test func anEditByAnyoneReloadsTheHistoryKeepingTheSelectionOnItsVersion() async throws {
        let (store, coordinator) = try await started()
        await press([.enter, .character("h"), .character("j")], coordinator)
        let model = try history(coordinator)
        #expect(model.current.selectedVersion?.revision == 1)
        _ = try await store.perform(
            .update(id: TUIFixtures.id(1), content: "장보기: 우유\n계란\n빵", expectedRevision: nil, author: Self.bob))
        try await waitFor("the third version", coordinator) { model.current.versions.count == 3 }
        #expect(model.current.versions.first?.content == "장보기: 우유\n계란\n빵")
        #expect(model.current.selectedVersion?.revision == 1)
        #expect(model.current.memo?.revision == 3)
        coordinator.stop()
    }

    @Test func rRestoresAfterYesGuardedByTheRevisionSeenAndNoKeepsIt() async throws {
        let (store, coordinator) = try await started()
        await press([.enter, .character("h"), .character("j"), .character("r")], coordinator)
        let model = try history(coordinator)
        #expect(model.current.confirmingRestore?.revision == 1)
        await press([.enter], coordinator)
        #expect(model.current.confirmingRestore == nil)
        #expect(try store.memo(TUIFixtures.id(1)).content == "장보기: 우유\n계란")
        await press([.character("r"), .character("y")], coordinator)
        let restored = try store.memo(TUIFixtures.id(1))
        #expect(restored.content == "장보기: 우유")
        #expect(restored.revision == 3)
        try await waitFor("the restore listed", coordinator) { model.current.versions.count == 3 }
        #expect(model.current.versions.first?.kind == .restore)
        #expect(model.current.message == "리비전 1으로 되돌렸습니다")
        // The newest version is the memo's text: nothing to restore.
        await press([.character("k"), .character("k"), .character("r")], coordinator)
        #expect(model.current.selected == 0)
        #expect(model.current.confirmingRestore == nil)
        #expect(model.current.message == "지금의 내용과 같은 버전입니다")
        coordinator.stop()
    }

    @Test func aRestoreOfAMemoChangedMeanwhileIsRefusedAsAConflictAndSaysSo() async throws {
        let (store, coordinator) = try await started(strings: .english)
        await press([.enter, .character("h"), .character("j"), .character("r")], coordinator)
        let model = try history(coordinator)
        // Someone edits the memo after the question went up and before the scene hears of it: the change's
        // delivery is queued behind this code on the front end's loop, so the restore still expects revision 2.
        // (The memory store applies a submitted write before `submit` returns.)
        store.submit(.update(id: TUIFixtures.id(1), content: "다른 사람", expectedRevision: nil, author: Self.bob)) { _ in }
        #expect(try store.memo(TUIFixtures.id(1)).revision == 3)
        #expect(model.current.memo?.revision == 2)
        let restore = model.answerRestore(true)
        await restore?.value
        #expect(model.current.message == "changed by someone else meanwhile; not restored")
        #expect(try store.memo(TUIFixtures.id(1)).content == "다른 사람")
        coordinator.stop()
    }

    @Test func aReadOnlyCertificateReadsTheHistoryAndTrashButRIsRefused() async throws {
        let (store, coordinator) = try await started(strings: .english)
        let readOnly = ConnectionStatus(server: "memo.example.org:7443", state: .live, readOnly: true)
        await press([.enter, .character("h"), .character("j"), .character("r")], coordinator, status: readOnly)
        let model = try history(coordinator)
        #expect(model.current.confirmingRestore == nil)
        #expect(model.current.message == "read-only: this certificate may not write")
        #expect(try store.memo(TUIFixtures.id(1)).revision == 2)
        coordinator.stop()
    }

    @Test func aMemoDeletedWhileItsHistoryIsOpenTakesItBackToTheListSayingSo() async throws {
        let (store, coordinator) = try await started()
        await press([.enter, .character("h")], coordinator)
        #expect(coordinator.currentScene == .history(TUIFixtures.id(1)))
        _ = try await store.perform(.delete(id: TUIFixtures.id(1), expectedRevision: nil, author: Self.bob))
        try await waitFor("the list back", coordinator) { coordinator.currentScene == .list }
        #expect(coordinator.stack.value?.scenes == [.list])
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        #expect(list.current.message == "열어 둔 메모가 다른 곳에서 삭제되었습니다")
        coordinator.stop()
    }

    @Test func theTrashListsDeletedMemosWithWhoDeletedThemAndBringsOneBackAfterYes() async throws {
        let (store, coordinator) = try await started(strings: .english)
        _ = try await store.perform(.delete(id: TUIFixtures.id(1), expectedRevision: nil, author: Self.bob))
        await settle(coordinator)
        await press([.character("T")], coordinator)
        let model = try trash(coordinator)
        #expect(model.current.items.map(\.memo.id) == [TUIFixtures.id(1)])
        #expect(model.current.items.first?.deletedBy.name == "bob")
        #expect(model.current.items.first?.memo.content == "장보기: 우유\n계란")
        await press([.character("r")], coordinator)
        #expect(model.current.confirmingRestore?.memo.id == TUIFixtures.id(1))
        await press([.character("n")], coordinator)
        #expect(!store.contains(id: TUIFixtures.id(1)))
        await press([.character("r"), .character("y")], coordinator)
        #expect(try store.memo(TUIFixtures.id(1)).content == "장보기: 우유\n계란")
        try await waitFor("the trash emptied", coordinator) { model.current.items.isEmpty && model.current.loaded }
        #expect(model.current.message == "brought back")
        await press([.escape], coordinator)
        #expect(coordinator.currentScene == .list)
        coordinator.stop()
    }

    @Test func theTrashFollowsDeletesAndRestoresMadeElsewhere() async throws {
        let (store, coordinator) = try await started()
        await press([.character("T")], coordinator)
        let model = try trash(coordinator)
        #expect(model.current.items.isEmpty)
        _ = try await store.perform(.delete(id: TUIFixtures.id(1), expectedRevision: nil, author: Self.bob))
        try await waitFor("the delete in the trash", coordinator) { model.current.items.count == 1 }
        _ = try await store.restore(id: TUIFixtures.id(1), revision: nil, expectedRevision: nil, author: Self.alice)
        try await waitFor("the memo out of the trash", coordinator) { model.current.items.isEmpty }
        coordinator.stop()
    }

    @Test func bringingBackAMemoPurgedMeanwhileSaysWhyAndDropsIt() async throws {
        let clock = SteppedClock()
        let (store, coordinator) = try await started(
            clock: clock, versions: VersionPolicy(keep: 50, trashDays: 1), strings: .english)
        _ = try await store.perform(.delete(id: TUIFixtures.id(1), expectedRevision: nil, author: Self.bob))
        await settle(coordinator)
        await press([.character("T"), .character("r")], coordinator)
        let model = try trash(coordinator)
        #expect(model.current.confirmingRestore != nil)
        // Two days later the trash has purged it (at the restore's own write).
        clock.advance(days: 2)
        await press([.character("y")], coordinator)
        try await waitFor("the purged memo dropped", coordinator) { model.current.items.isEmpty }
        let message = try #require(model.current.message)
        #expect(message.hasPrefix("not restored: "), "\(message)")
        #expect(!store.contains(id: TUIFixtures.id(1)))
        coordinator.stop()
    }

    @Test func hAndTSayThereIsNoHistoryOnAStoreWithoutVersions() async throws {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.utcKorean, strings: .english)
        coordinator.start()
        await settle(coordinator)
        await press([.character("T")], coordinator)
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        #expect(list.current.message == "no history here: this store keeps no versions")
        await press([.enter, .character("h")], coordinator)
        guard case .detail(let detail) = coordinator.currentModel else { throw NavigationError.emptyStack }
        #expect(detail.current.message == "no history here: this store keeps no versions")
        coordinator.stop()
    }

    // MARK: Screens

    @Test func theHistoryItsDifferenceAndTheTrashOnScreen() async throws {
        for (width, height) in TUISnapshotTests.sizes {
            let (store, coordinator) = try await started()
            await press([.enter, .character("h")], coordinator)
            var grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "history-\(width)x\(height)")
            await press([.character("d")], coordinator)
            grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "history-diff-\(width)x\(height)")
            await press([.escape, .character("j"), .character("r")], coordinator)
            grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "history-restore-\(width)x\(height)")
            await press([.escape, .escape, .escape], coordinator)
            _ = try await store.perform(.delete(id: TUIFixtures.id(1), expectedRevision: nil, author: Self.bob))
            await settle(coordinator)
            await press([.character("T")], coordinator)
            grid = SceneView.render(coordinator.currentModel, status: .local, width: width, height: height)
            try expectSnapshot(grid, named: "trash-\(width)x\(height)")
            coordinator.stop()
        }
    }
}
