import Foundation
import Glibc
import MemoModel
import MemoTUI
import MemoTestSupport
import MemoText
import MemoViewModels
import Testing

/// The front end's rough edges from issue 26: help in every scene, Save to file, carriage returns, Up/Down in a
/// wrapped line, and rows of graphemes whose width terminals disagree on.
@Suite("TUI rough edges: help, save to file, \\r, wrapped Up/Down, uncertain widths")
@FrontEnd
struct TUIRoughEdgesTests {
    /// The coordinator on the list, its memos delivered (they hop onto the front end's loop).
    private func started(_ contents: [String]) async -> SceneCoordinator {
        let coordinator = SceneCoordinator(storage: TUIFixtures.store(contents), dateFormat: TUIFixtures.utcKorean,
                                           strings: .english)
        coordinator.start()
        await settle(coordinator)
        return coordinator
    }

    private func press(_ keys: Key..., on coordinator: SceneCoordinator, width: Int = 80, height: Int = 24) async {
        for key in keys {
            _ = await SceneView.handle(key, model: coordinator.currentModel, width: width, height: height)
            await settle(coordinator)
        }
    }

    private func screen(_ coordinator: SceneCoordinator, width: Int = 80, height: Int = 24,
                        status: ConnectionStatus = .local) -> [String] {
        let grid = SceneView.render(coordinator.currentModel, status: status, width: width, height: height)
        return (0..<grid.height).map { grid.text(ofRow: $0) }
    }

    // MARK: Help

    @Test func questionMarkShowsTheDetailsKeysAndAnyKeyClosesThem() async throws {
        let coordinator = await started(["a memo"])
        defer { coordinator.stop() }
        await press(.enter, on: coordinator)
        #expect(coordinator.currentScene == .detail(TUIFixtures.id(1)))
        await press(.character("?"), on: coordinator)
        var lines = screen(coordinator)
        #expect(lines.contains { $0.contains("S         save to a file (0600)") }, "\(lines)")
        #expect(lines.contains { $0.contains("Esc q ←   back to the list") })
        // The help box starts with the connection said whole.
        #expect(lines.contains { $0.contains("● local · live") })
        // Esc closes the help and does not go back.
        await press(.escape, on: coordinator)
        lines = screen(coordinator)
        #expect(!lines.contains { $0.contains("save to a file (0600)") }, "\(lines)")
        #expect(coordinator.currentScene == .detail(TUIFixtures.id(1)))
        await press(.character("?"), on: coordinator)
        await press(.character("?"), on: coordinator)
        #expect(!screen(coordinator).contains { $0.contains("save to a file (0600)") })
        #expect(coordinator.currentScene == .detail(TUIFixtures.id(1)))
    }

    @Test func ctrlGShowsTheEditorsKeysAndAKeyTypedMeanwhileIsNotLost() async throws {
        let coordinator = await started([])
        defer { coordinator.stop() }
        await press(.character("n"), on: coordinator)
        guard case .compose(let compose)? = coordinator.currentModel else {
            Issue.record("no editor")
            return
        }
        // `?` is text in the editor.
        await press(.character("?"), on: coordinator)
        #expect(compose.current.buffer.text == "?")
        #expect(screen(coordinator).last?.contains("Ctrl-G help") == true)
        await press(.control("g"), on: coordinator)
        var lines = screen(coordinator)
        #expect(lines.contains { $0.contains("Ctrl-S    save") }, "\(lines)")
        #expect(lines.contains { $0.contains("↑/↓       one screen row up/down") })
        #expect(SceneView.render(coordinator.currentModel, status: .local, width: 80, height: 24).cursor == nil)
        // `?` closes it (and is not typed); so does Esc, without asking to discard.
        await press(.character("?"), on: coordinator)
        lines = screen(coordinator)
        #expect(!lines.contains { $0.contains("Ctrl-S    save") })
        #expect(compose.current.buffer.text == "?")
        await press(.control("g"), on: coordinator)
        await press(.escape, on: coordinator)
        #expect(!compose.current.confirmingCancel)
        #expect(!screen(coordinator).contains { $0.contains("Ctrl-S    save") })
        // A letter typed with the help open closes it and is typed.
        await press(.control("g"), on: coordinator)
        await press(.character("x"), on: coordinator)
        #expect(compose.current.buffer.text == "?x")
        #expect(!screen(coordinator).contains { $0.contains("Ctrl-S    save") })
    }

    @Test func theListsHelpSaysTheConnectionWholeThatTheBarHadToCut() async throws {
        let coordinator = await started(["a memo"])
        defer { coordinator.stop() }
        let status = ConnectionStatus(
            server: "a-long-server-name.example.org:7443", state: .reconnecting(attempt: 4),
            reason: .said("connection refused"))
        await press(.character("?"), on: coordinator)
        let lines = screen(coordinator, width: 100, height: 20, status: status)
        #expect(lines.contains {
            $0.contains("◌ a-long-server-name.example.org:7443 · reconnecting (connection refused, try 4)")
        }, "\(lines)")
        #expect(lines.last?.contains("? help") == true, "\(lines.last ?? "")")
    }

    // MARK: Save to file

    /// A detail scene with its memo delivered.
    private func detailWith(_ content: String) async -> DetailViewModel {
        let detail = DetailViewModel(memoID: TUIFixtures.id(1), storage: TUIFixtures.store([content]),
                                     dateFormat: TUIFixtures.utcKorean)
        await FrontEnd.drained()
        return detail
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func saveToFileWritesModeSixHundredAndAsksBeforeReplacingAFile() async throws {
        let directory = try TemporaryDirectory()
        let detail = await detailWith("비밀 메모")
        defer { detail.close() }
        let path = directory.path + "/memo.txt"
        #expect(await detail.confirmSave(to: path) == path)
        #expect(mode(path) == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "비밀 메모")

        // There is a file there now (the user's, readable by others): the save asks first.
        try "the user's own file".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        #expect(await detail.confirmSave(to: path) == nil)
        #expect(detail.current.confirmingOverwrite == path)
        let question = SceneView.render(.detail(detail), status: .local, width: 100, height: 10)
        #expect(question.text(ofRow: 8).hasPrefix("\(path) exists: overwrite it? y/N"), "\(question.textDump)")
        // No (any key but y) keeps the file and offers the path again, to change it.
        _ = await DetailView.handle(.character("n"), model: detail, width: 80, height: 24)
        #expect(detail.current.confirmingOverwrite == nil)
        #expect(detail.current.savePrompt?.text == path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "the user's own file")
        // Enter on the same path asks again; y replaces it, 0600 like a new one.
        _ = await DetailView.handle(.enter, model: detail, width: 80, height: 24)
        #expect(detail.current.confirmingOverwrite == path)
        _ = await DetailView.handle(.character("y"), model: detail, width: 80, height: 24)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "비밀 메모")
        #expect(mode(path) == 0o600)
        #expect(detail.current.message == "saved to \(path)")
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["memo.txt"])
    }

    @Test func saveToFileErrorsSayTheSystemsWordsNotFoundations() async throws {
        let directory = try TemporaryDirectory()
        let detail = await detailWith("메모")
        defer { detail.close() }
        let missing = directory.path + "/no-such-folder/memo.txt"
        #expect(await detail.confirmSave(to: missing) == nil)
        #expect(detail.current.message == "cannot write \(missing): No such file or directory")
        #expect(await detail.confirmSave(to: directory.path) == nil)
        #expect(detail.current.message == "cannot write \(directory.path): Is a directory")
        #expect(detail.current.confirmingOverwrite == nil)
        #expect(detail.current.message?.contains("NSCocoaErrorDomain") == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    // MARK: Carriage returns

    @Test func aCarriageReturnIsShownAsASymbolInEveryScene() async throws {
        let content = "first\rsecond\r\nthird"
        let coordinator = await started([content])
        defer { coordinator.stop() }
        var lines = screen(coordinator)
        #expect(lines[1].hasPrefix("> first␍second␍ "), "\(lines[1])")
        await press(.enter, on: coordinator)
        lines = screen(coordinator)
        #expect(lines[1].hasPrefix("first␍second␍ "), "\(lines)")
        #expect(lines[2].hasPrefix("third "), "\(lines)")
        await press(.character("e"), on: coordinator)
        guard case .compose(let compose)? = coordinator.currentModel else {
            Issue.record("no editor")
            return
        }
        lines = screen(coordinator)
        #expect(lines[1].hasPrefix("first␍second␍ "), "\(lines)")
        #expect(lines[2].hasPrefix("third "), "\(lines)")
        // The editor keeps every byte: opened and untouched, nothing changed.
        #expect(compose.current.buffer.text.hasSameBytes(as: content))
        #expect(!compose.current.isDirty)
    }

    // MARK: Up and Down in a wrapped line

    @Test func upAndDownMoveByScreenRowInAWrappedLineKeepingTheColumn() async throws {
        let coordinator = await started([])
        defer { coordinator.stop() }
        await press(.character("n"), on: coordinator, width: 4)
        guard case .compose(let compose)? = coordinator.currentModel else {
            Issue.record("no editor")
            return
        }
        // At 4 columns: "abcd" "efgh" "ij" then "xy"; the cursor after "g".
        await press(.paste("abcdefghij\nxy"), on: coordinator, width: 4)
        for _ in 0..<6 { await press(.left, on: coordinator, width: 4) }
        #expect(compose.current.buffer.row == 0 && compose.current.buffer.column == 7)
        await press(.down, on: coordinator, width: 4)
        #expect(compose.current.buffer.row == 0 && compose.current.buffer.column == 10)
        await press(.down, on: coordinator, width: 4)
        #expect(compose.current.buffer.row == 1 && compose.current.buffer.column == 2)
        // Back up: the column it started from (3) is kept across the short rows.
        await press(.up, on: coordinator, width: 4)
        #expect(compose.current.buffer.row == 0 && compose.current.buffer.column == 10)
        await press(.up, on: coordinator, width: 4)
        #expect(compose.current.buffer.row == 0 && compose.current.buffer.column == 7)
        await press(.up, on: coordinator, width: 4)
        #expect(compose.current.buffer.row == 0 && compose.current.buffer.column == 3)
        let grid = SceneView.render(coordinator.currentModel, status: .local, width: 4, height: 8)
        #expect(grid.cursor == CursorPosition(row: 1, column: 3))
    }

    @Test func upInAWrappedRowNeverLandsPastItsLastGrapheme() {
        // "abcd", then "가나" "다" at 5 columns: from column 4 of "abcd", Down may not go to the end of "가나" (a
        // cursor there is drawn at the start of "다"'s row): it stops on "나".
        var buffer = TextBuffer("abcd\n가나다")
        buffer.moveUp(width: 5)
        buffer.moveUp(width: 5)
        buffer.moveToLineEnd()
        #expect(buffer.row == 0 && buffer.column == 4)
        buffer.moveDown(width: 5)
        #expect(buffer.row == 1 && buffer.column == 1)
        #expect(buffer.layout(width: 5).cursorLine == 1)
        // The column wanted (4) is kept: on "다"'s row the cursor goes to its end.
        buffer.moveDown(width: 5)
        #expect(buffer.row == 1 && buffer.column == 3)
        #expect(buffer.layout(width: 5).cursorLine == 2)
    }

    // MARK: Graphemes of uncertain width

    @Test func aRowWithAFlagOrAZWJSequenceIsClearedAndDrawnWholeWhenItChanges() {
        var renderer = Renderer()
        var grid = Grid(width: 12, height: 2)
        grid.put("🇰🇷 abc", row: 0, column: 0)
        grid.put("plain", row: 1, column: 0)
        _ = renderer.render(grid)

        // One letter after the flag changes: the whole row goes, cleared first, with the cursor placed again after
        // the flag (the terminal may have drawn it one column wide).
        grid.put("d", row: 0, column: 5)
        let output = renderer.render(grid)
        #expect(output.hasPrefix("\u{1B}[1;1H\u{1B}[0m\u{1B}[2K"), "\(output.debugDescription)")
        #expect(output.contains("🇰🇷\u{1B}[1;3H "), "\(output.debugDescription)")
        #expect(output.contains("abd"), "\(output.debugDescription)")
        // The plain row did not change and was not sent.
        #expect(!output.contains("\u{1B}[2;"), "\(output.debugDescription)")

        // A row whose ZWJ sequence goes away is also cleared whole (its old drawing may have been four columns).
        grid.put("👩‍💻 x", row: 1, column: 0)
        _ = renderer.render(grid)
        grid.put("ab   ", row: 1, column: 0)
        let after = renderer.render(grid)
        #expect(after.hasPrefix("\u{1B}[2;1H\u{1B}[0m\u{1B}[2K"), "\(after.debugDescription)")

        // A plain row still gets only its changed cells.
        var plain = Renderer()
        var other = Grid(width: 6, height: 1)
        other.put("abc", row: 0, column: 0)
        _ = plain.render(other)
        other.put("d", row: 0, column: 2)
        #expect(plain.render(other) == "\u{1B}[1;3H\u{1B}[0md")
    }

    @Test func uncertainWidthIsFlagsZWJSequencesModifiersAndKeycapsNotHangulOrPlainEmoji() {
        for character: Character in ["🇰🇷", "👩‍💻", "👍🏽", "1️⃣", "❤️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"] {
            #expect(ColumnWidth.isUncertain(character), "\(character)")
        }
        for character: Character in ["한", "a", "👍", "é", "漢"] {
            #expect(!ColumnWidth.isUncertain(character), "\(character)")
        }
    }
}
