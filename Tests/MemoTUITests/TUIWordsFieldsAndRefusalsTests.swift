import Foundation
import MemoClient
import MemoModel
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import Testing

/// The front end's words per locale, its one-line fields, paging, the conflict prompt, and what it does with a
/// write the server refused after it was shown: no terminal involved.
@Suite("TUI: locale tables, one-line fields, paging, conflicts and refused offline writes")
@FrontEnd
struct TUIWordsFieldsAndRefusalsTests {
    private func started(_ contents: [String], locale: String = "en_US_POSIX") async -> (MemoryStore, SceneCoordinator) {
        let store = TUIFixtures.store(contents)
        let format = MemoDateFormat(locale: Locale(identifier: locale), timeZone: TimeZone(identifier: "UTC")!)
        let coordinator = SceneCoordinator(storage: store, dateFormat: format)
        coordinator.start()
        await FrontEnd.drained()
        return (store, coordinator)
    }

    private func screen(_ coordinator: SceneCoordinator, _ status: ConnectionStatus = .local, width: Int = 80,
                        height: Int = 24) -> [String] {
        let grid = SceneView.render(coordinator.currentModel, status: status, width: width, height: height)
        return (0..<grid.height).map { grid.text(ofRow: $0) }
    }

    private func press(_ keys: [Key], _ coordinator: SceneCoordinator, status: ConnectionStatus = .local,
                       height: Int = 24) async {
        for key in keys {
            _ = await SceneView.handle(key, model: coordinator.currentModel, status: status, width: 80, height: height)
            await settle(coordinator)
        }
    }

    @Test func sceneTitlesAndEveryOtherWordFollowTheLocale() async {
        #expect(Strings.forLocale(Locale(identifier: "ko_KR")) == .korean)
        #expect(Strings.forLocale(Locale(identifier: "ko")) == .korean)
        #expect(Strings.forLocale(Locale(identifier: "en_US_POSIX")) == .english)
        #expect(Strings.forLocale(Locale(identifier: "de_DE")) == .english)
        #expect(TerminalOptions.fromEnvironment(["LANG": "ko_KR.UTF-8"]).strings == .korean)
        #expect(TerminalOptions.fromEnvironment(["LANG": "ko_KR.UTF-8", "LC_MESSAGES": "C"]).strings == .english)
        #expect(TerminalOptions.fromEnvironment(["LANG": "C.UTF-8"]).strings == .english)
        var options = TerminalOptions.fromEnvironment(["LANG": "C.UTF-8"])
        options.setLocale(Locale(identifier: "ko_KR"))
        #expect(options.strings == .korean && options.dateFormat.locale.identifier == "ko_KR")

        for (locale, titles, hint) in [
            ("ko_KR", ["메모 목록", "메모 보기", "메모 편집", "새 메모"], "? 도움말"),
            ("en_US_POSIX", ["Memos", "Memo", "Edit memo", "New memo"], "? help"),
        ] {
            let (_, coordinator) = await started(["하나"], locale: locale)
            #expect(screen(coordinator)[0].contains(titles[0]), "\(locale)")
            #expect(screen(coordinator).last?.contains(hint) == true, "\(locale)")
            await press([.enter], coordinator)
            #expect(screen(coordinator)[0].contains(titles[1]), "\(locale)")
            await press([.character("e")], coordinator)
            #expect(screen(coordinator)[0].contains(titles[2]), "\(locale)")
            await press([.escape, .escape, .character("n")], coordinator)
            #expect(screen(coordinator)[0].contains(titles[3]), "\(locale)")
            coordinator.stop()
        }
    }

    @Test func theSavePathStartsSelectedSoTypingReplacesItAndCtrlUCtrlWEditEveryField() async throws {
        let (_, coordinator) = await started(["하나"])
        await press([.enter, .character("S")], coordinator)
        guard case .detail(let detail) = coordinator.currentModel else { throw NavigationError.emptyStack }
        let suggested = try #require(detail.current.savePrompt)
        #expect(suggested.isSelected && suggested.text == detail.defaultFilePath)
        await press([.character("x")], coordinator)
        #expect(detail.current.savePrompt?.text == "x")
        await press(Array("yz notes.txt").map { Key.character($0) }, coordinator)
        await press([.control("w")], coordinator)
        #expect(detail.current.savePrompt?.text == "xyz ")
        await press([.control("u")], coordinator)
        #expect(detail.current.savePrompt?.text == "")
        await press([.escape, .escape, .character("/")], coordinator)

        // The list's filter takes the same keys.
        await press(Array("memo list").map { Key.character($0) }, coordinator)
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        await press([.control("w")], coordinator)
        #expect(list.current.filter.text == "memo ")
        await press([.control("u")], coordinator)
        #expect(list.current.filter.text == "")
        coordinator.stop()

        var field = LineInput("path", selected: true)
        field.backspace()
        #expect(field.text == "" && !field.isSelected)
    }

    @Test func pageDownMovesOneScreenAndTheHelpListsPgUpPgDn() async throws {
        let (_, coordinator) = await started((1...40).map { "메모 \($0)" })
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        // 10 rows: a title, 7 memos, a prompt line and the status bar.
        await press([.pageDown], coordinator, height: 10)
        #expect(list.current.selectedIndex == 7)
        await press([.pageDown, .pageUp], coordinator, height: 10)
        #expect(list.current.selectedIndex == 7)
        await press([.character("?")], coordinator)
        #expect(screen(coordinator).contains { $0.contains("PgUp/PgDn") })
        coordinator.stop()
    }

    @Test func theConflictPromptShowsTheirRevisionAndFirstLine() async throws {
        let (store, coordinator) = await started(["하나"])
        await press([.enter, .character("e"), .character("!")], coordinator)
        let theirs = try await store.update(id: TUIFixtures.id(1), content: "그들의 첫 줄\n둘째 줄", expectedRevision: nil)
        await FrontEnd.drained()
        await press([.control("s")], coordinator)
        let lines = screen(coordinator)
        #expect(lines.contains { $0.contains("revision \(theirs.revision)") && $0.contains("“그들의 첫 줄”") },
                "\(lines)")
        #expect(lines.contains { $0.contains("o overwrite") })
        coordinator.stop()
    }

    @Test func aRefusedOfflineEditOpensTheEditorOnOurTextWithTheConflictChoice() async throws {
        let (store, coordinator) = await started(["하나"])
        var ours = TUIFixtures.memo(1, "오프라인에서 고친 내용")
        ours.revision = 0
        let theirs = try await store.update(id: TUIFixtures.id(1), content: "그쪽이 고친 내용", expectedRevision: nil)
        await FrontEnd.drained()
        coordinator.refused(WriteRefusal(
            kind: .update, memo: ours, baseRevision: 1, isConflict: true, theirs: theirs, reason: "conflict"))
        guard case .compose(let editor) = coordinator.currentModel else { throw NavigationError.emptyStack }
        #expect(editor.current.buffer.text == "오프라인에서 고친 내용")
        #expect(editor.current.conflict?.theirs == theirs)
        // "Overwrite" saves our text over their revision.
        await editor.overwrite()?.value
        #expect(coordinator.currentScene == .list)
        #expect(try await store.get(id: TUIFixtures.id(1)).content == "오프라인에서 고친 내용")

        // Anything else refused is a line on the list, with the reason.
        coordinator.refused(WriteRefusal(
            kind: .create, memo: TUIFixtures.memo(9, "새 메모"), baseRevision: nil, isConflict: false, theirs: nil,
            reason: "permission denied: read-only"))
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        #expect(list.current.message == "the server refused “새 메모”: permission denied: read-only")
        coordinator.stop()
    }

    @Test func withNoListYetTheListSaysNotConnectedAndPendingRowsAreMarked() async throws {
        let (_, coordinator) = await started([])
        let unknown = ConnectionStatus(server: "s:1", state: .offline, hasList: false)
        #expect(screen(coordinator, unknown).contains { $0.contains("not connected") })
        #expect(!screen(coordinator, unknown).contains { $0.contains("no memos yet") })
        #expect(screen(coordinator).contains { $0.contains("no memos yet") })
        coordinator.stop()

        let (_, other) = await started(["하나", "둘"])
        let pending = ConnectionStatus(server: "s:1", state: .offline, pendingIDs: [TUIFixtures.id(1)])
        let lines = screen(other, pending)
        #expect(lines.contains { $0.contains("하나") && $0.contains("pending") })
        #expect(lines.contains { $0.contains("둘") && !$0.contains("pending") })
        #expect(lines.last?.contains("1 pending") == true)
        other.stop()
    }

    @Test func aMemoSelectedBeforeTheStoreListsItIsSelectedWhenItArrives() async throws {
        // An offline save returns before the store's list has the memo: the selection waits for it.
        let store = TUIFixtures.store(["하나", "둘"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        let id = TUIFixtures.id(9)
        list.select(id)
        #expect(list.current.selectedID == TUIFixtures.id(2))
        _ = try await store.create(content: "방금 저장한 메모", id: id, insertDate: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedID == id)
        list.moveDown()
        _ = try await store.create(content: "또 하나", id: nil, insertDate: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedMemo?.content == "둘")
        list.close()
    }

    @Test func theWriteQueueFileKeepsEveryWriteInOrder() throws {
        let folder = try TemporaryDirectory()
        let fingerprint = String(repeating: "ab", count: 32)
        let path = WriteQueueFile.path(besideCache: folder.path + "/mirror-h_1.cache", fingerprint: fingerprint)
        #expect(path == folder.path + "/mirror-h_1.abababababababab.queue")
        let identity = ClientIdentity(server: "h:1", fingerprint: fingerprint)
        let writes = [
            QueuedWrite(kind: .create, memo: TUIFixtures.memo(1, "새 메모 😀"), expectedRevision: nil, afterQueued: false),
            QueuedWrite(kind: .update, memo: TUIFixtures.memo(1, "고침"), expectedRevision: nil, afterQueued: true),
            QueuedWrite(kind: .delete, memo: TUIFixtures.memo(2, "지움"), expectedRevision: 7, afterQueued: false),
        ]
        try WriteQueueFile.save(writes, identity: identity, to: path)
        let loaded = try WriteQueueFile.load(from: path)
        #expect(loaded.writes == writes)
        #expect(loaded.identity == identity)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try WriteQueueFile.save([], identity: identity, to: path)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try WriteQueueFile.load(from: path).writes == [])
        try Data("MEMOWRQ1\u{0}\u{0}\u{0}\u{1}".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: MemoError.self) { try WriteQueueFile.load(from: path) }
    }

    /// DurableFile (MemoSystem) has its own error; the queue file still fails with the storage error it always did.
    @Test func aWriteQueueFileThatCannotBeReplacedIsAStorageErrorSayingWhichCallFailed() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/in-the-way.queue"
        try FileManager.default.createDirectory(atPath: path + "/full", withIntermediateDirectories: true)
        let identity = ClientIdentity(server: "h:1", fingerprint: String(repeating: "ab", count: 32))
        let write = QueuedWrite(kind: .create, memo: TUIFixtures.memo(1, "메모"), expectedRevision: nil, afterQueued: false)
        #expect(throws: MemoError.storage("renaming to \(path): Is a directory")) {
            try WriteQueueFile.save([write], identity: identity, to: path)
        }
        #expect(FileManager.default.fileExists(atPath: path + "/full"))
    }
}
