import MemoModel
import MemoTUI
import MemoViewModels
import Testing

@Suite("TUI navigation: scene stack transitions and the coordinator")
@FrontEnd
struct TUINavigationTests {
    @Test func transitionsAreValuesAppliedToAStack() throws {
        let id = TUIFixtures.id(1)
        var stack = try SceneStack.apply(.root(.list), to: SceneStack())
        #expect(stack.scenes == [.list])
        try stack.apply(.push(.detail(id)))
        try stack.apply(.modal(.compose(.create)))
        #expect(stack.top == .compose(.create))
        #expect(throws: NavigationError.nothingToPop) { try SceneStack.apply(.pop, to: stack) }
        try stack.apply(.dismiss)
        #expect(stack.top == .detail(id))
        try stack.apply(.pop)
        #expect(stack.scenes == [.list])
        #expect(throws: NavigationError.nothingToPop) { try SceneStack.apply(.pop, to: stack) }
        #expect(throws: NavigationError.noModalToDismiss) { try SceneStack.apply(.dismiss, to: stack) }
        #expect(throws: NavigationError.emptyStack) { try SceneStack.apply(.push(.list), to: SceneStack()) }
    }

    @Test func dismissRemovesTheModalAndWhatWasPushedOnIt() throws {
        var stack = SceneStack(root: .list)
        try stack.apply(.modal(.compose(.create)))
        try stack.apply(.push(.detail(TUIFixtures.id(2))))
        try stack.apply(.dismiss)
        #expect(stack.scenes == [.list])
    }

    private func listModel(_ coordinator: SceneCoordinator) throws -> ListViewModel {
        guard case .list(let model) = coordinator.currentModel else {
            Issue.record("the list is not on screen: \(String(describing: coordinator.currentScene))")
            throw NavigationError.emptyStack
        }
        return model
    }

    private func detailModel(_ coordinator: SceneCoordinator) throws -> DetailViewModel {
        guard case .detail(let model) = coordinator.currentModel else {
            Issue.record("no detail on screen: \(String(describing: coordinator.currentScene))")
            throw NavigationError.emptyStack
        }
        return model
    }

    /// The seeds' bug: after opening a memo and going back, the list stopped opening memos.
    @Test func openBackOpenWorksEveryTimeAlsoAfterAModalWasDismissed() async throws {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.seoul)
        await FrontEnd.drained()
        coordinator.start()
        await FrontEnd.drained()
        for round in 0..<5 {
            let list = try listModel(coordinator)
            list.moveToFirst()
            list.moveDown(by: round % 3)
            let chosen = try #require(list.current.selectedMemo)
            list.openSelected()
            await FrontEnd.drained()
            #expect(coordinator.currentScene == .detail(chosen.id), "round \(round)")
            let detail = try detailModel(coordinator)
            #expect(detail.current.memo?.id == chosen.id)
            detail.back()
            #expect(coordinator.currentScene == .list, "round \(round)")

            // A modal in between: compose a memo, cancel it, then open a memo again.
            try listModel(coordinator).compose()
            #expect(coordinator.currentScene == .compose(.create))
            guard case .compose(let compose) = coordinator.currentModel else { throw NavigationError.emptyStack }
            compose.cancel()
            #expect(coordinator.currentScene == .list)
            try listModel(coordinator).openSelected()
            await FrontEnd.drained()
            #expect(coordinator.currentScene == .detail(chosen.id))
            // Edit from the detail (a modal over a push), dismiss, go back.
            try detailModel(coordinator).edit()
            #expect(coordinator.currentScene == .compose(.edit(chosen)))
            guard case .compose(let editor) = coordinator.currentModel else { throw NavigationError.emptyStack }
            editor.cancel()
            #expect(coordinator.currentScene == .detail(chosen.id))
            try detailModel(coordinator).back()
            #expect(coordinator.stack.value?.scenes == [.list])
        }
        coordinator.stop()
    }

    @Test func aMemoDeletedElsewhereTakesTheDetailBackToTheList() async throws {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.seoul)
        await FrontEnd.drained()
        coordinator.start()
        await FrontEnd.drained()
        let list = try listModel(coordinator)
        let chosen = try #require(list.current.selectedMemo)
        list.openSelected()
        await FrontEnd.drained()
        #expect(coordinator.currentScene == .detail(chosen.id))
        _ = try await store.delete(id: chosen.id, expectedRevision: nil)
        await FrontEnd.drained()
        #expect(coordinator.currentScene == .list)
        #expect(try listModel(coordinator).current.memos.count == 2)
        // The list, where the user lands, says why (in the locale's words: Seoul's dates, Korean).
        #expect(try listModel(coordinator).current.message == "열어 둔 메모가 다른 곳에서 삭제되었습니다")
        coordinator.stop()
    }

    @Test func aDetailDeletedUnderAnEditorLeavesWhenTheEditorCloses() async throws {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.seoul)
        await FrontEnd.drained()
        coordinator.start()
        await FrontEnd.drained()
        let chosen = try #require(try listModel(coordinator).current.selectedMemo)
        try listModel(coordinator).openSelected()
        await FrontEnd.drained()
        try detailModel(coordinator).edit()
        _ = try await store.delete(id: chosen.id, expectedRevision: nil)
        await FrontEnd.drained()
        // The editor stays: the user's text is not thrown away under them.
        #expect(coordinator.currentScene == .compose(.edit(chosen)))
        guard case .compose(let editor) = coordinator.currentModel else { throw NavigationError.emptyStack }
        editor.cancel()
        #expect(coordinator.currentScene == .list)
        coordinator.stop()
    }

    @Test func savingANewMemoDismissesTheEditorAndSelectsIt() async throws {
        let store = TUIFixtures.store(TUIFixtures.korean)
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.seoul)
        await FrontEnd.drained()
        coordinator.start()
        await FrontEnd.drained()
        try listModel(coordinator).moveToLast()
        try listModel(coordinator).compose()
        guard case .compose(let editor) = coordinator.currentModel else { throw NavigationError.emptyStack }
        editor.edit { $0.insert(text: "새 메모") }
        await editor.save()?.value
        #expect(coordinator.currentScene == .list)
        #expect(try listModel(coordinator).current.selectedMemo?.content == "새 메모")
        coordinator.stop()
    }
}
