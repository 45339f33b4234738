import MemoModel
import MemoText
import MemoViewModels

/// The detail scene: the memo wrapped to the width, then its insert date, its revision and update date.
public enum DetailView {
    /// The lines the memo takes at `width`: its text, a blank line, the date, the revision and update date (or,
    /// while a write of it waits for the server, `pendingNote` in place of a revision that is about to change).
    static func lines(
        _ state: DetailState, width: Int, pendingNote: String? = nil
    ) -> [(text: String, style: CellStyle)] {
        guard let text = state.contents.first else { return [] }
        var lines = TextLayout.wrap(text, to: width).map { ($0, CellStyle.plain) }
        lines.append(("", .plain))
        for (index, line) in state.contents.dropFirst().enumerated() {
            let shown = index == 1 ? pendingNote ?? line : line
            lines.append((TextLayout.truncate(shown, to: width), CellStyle.dim))
        }
        return lines
    }

    /// Rows available for the memo at a grid height: all but the title, the prompt line and the status bar.
    static func bodyRows(height: Int) -> Int { max(0, height - 3) }

    public static func draw(
        _ state: DetailState, status: ConnectionStatus, strings: Strings = .english, into grid: inout Grid
    ) {
        guard grid.height > 0, grid.width > 0 else { return }
        SceneChrome.title(strings.detailTitle, right: state.isGone ? strings.deletedTag : "", into: &grid)
        grid.cursor = nil
        let rows = bodyRows(height: grid.height)
        let pending = state.memo.map { status.pendingIDs.contains($0.id) } ?? false
        let all = lines(state, width: grid.width, pendingNote: pending ? strings.notYetConfirmed : nil)
        let offset = max(0, min(state.scroll, all.count - rows))
        for (index, line) in all.dropFirst(offset).prefix(rows).enumerated() {
            grid.put(line.text, row: 1 + index, column: 0, style: line.style)
        }
        if state.confirmingDelete {
            _ = SceneChrome.promptLine(strings.deleteThis, into: &grid)
        } else if let target = state.confirmingOverwrite {
            _ = SceneChrome.promptLine(strings.overwriteFile(target), into: &grid)
        } else if let prompt = state.savePrompt {
            SceneChrome.fieldLine(strings.saveTo, prompt, into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        } else if all.count > rows, rows > 0 {
            _ = SceneChrome.promptLine(strings.lineOf(offset + 1, all.count), style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            let hints = status.readOnly ? strings.detailHintsReadOnly : strings.detailHints
            StatusBarView.draw(status, hints: hints, strings: strings, into: &grid, row: grid.height - 1)
        }
        if state.helpVisible {
            SceneChrome.help(
                status.readOnly ? strings.detailHelpLinesReadOnly : strings.detailHelpLines, status: status,
                strings: strings, into: &grid)
        }
    }

    /// The detail's key bindings; `size` is the screen, for scrolling.
    @FrontEnd
    public static func handle(
        _ key: Key, model: DetailViewModel, status: ConnectionStatus = .local, width: Int, height: Int
    ) async -> ScreenCommand {
        let state = model.current
        if state.helpVisible {
            // Any key closes the help, as in the list; it does nothing else.
            model.toggleHelp()
            return .none
        }
        if state.confirmingDelete {
            model.answerDelete(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.confirmingOverwrite != nil {
            await model.answerOverwrite(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.savePrompt != nil {
            switch key {
            case .escape: model.cancelSave()
            case .enter: await model.confirmSave()
            default: model.editSavePath { _ = $0.apply(key) }
            }
            return .none
        }
        let rows = bodyRows(height: height)
        let limit = max(0, lines(state, width: width).count - rows)
        switch key {
        case .escape, .left, .character("q"), .backspace: model.back()
        case .character("e"), .enter, .character("d"), .delete:
            if status.readOnly {
                model.show(message: model.strings.readOnlyRefusal)
            } else if key == .character("d") || key == .delete {
                model.requestDelete()
            } else {
                model.edit()
            }
        case .character("?"), .control("g"):
            // The keys, and the whole reason the connection fails, which the status bar can only abbreviate.
            model.toggleHelp()
        case .character("s"): model.share()
        case .character("h"): model.openHistory()
        case .character("S"): model.beginSave()
        case .character("j"), .down: model.scroll(by: 1, limit: limit)
        case .character("k"), .up: model.scroll(by: -1, limit: limit)
        case .character(" "), .pageDown: model.scroll(by: max(1, rows - 1), limit: limit)
        case .pageUp: model.scroll(by: -max(1, rows - 1), limit: limit)
        default: break
        }
        return .none
    }
}
