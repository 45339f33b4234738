import MemoCore
import MemoText

/// The detail scene: the memo wrapped to the width, then its insert date (the seeds' two cells).
public enum DetailView {
    public static let hints = "e edit  d delete  s copy  S save to file  Esc back"

    /// The lines the memo takes at `width`: its text, a blank line, the date.
    static func lines(_ state: DetailState, width: Int) -> [(text: String, style: CellStyle)] {
        guard state.contents.count == 2 else { return [] }
        var lines = TextLayout.wrap(state.contents[0], to: width).map { ($0, CellStyle.plain) }
        lines.append(("", .plain))
        lines.append((TextLayout.truncate(state.contents[1], to: width), CellStyle.dim))
        return lines
    }

    /// Rows available for the memo at a grid height: all but the title, the prompt line and the status bar.
    static func bodyRows(height: Int) -> Int { max(0, height - 3) }

    public static func draw(_ state: DetailState, status: ConnectionStatus, into grid: inout Grid) {
        guard grid.height > 0, grid.width > 0 else { return }
        SceneChrome.title("메모 보기", right: state.isGone ? "deleted" : "", into: &grid)
        grid.cursor = nil
        let rows = bodyRows(height: grid.height)
        let all = lines(state, width: grid.width)
        let offset = max(0, min(state.scroll, all.count - rows))
        for (index, line) in all.dropFirst(offset).prefix(rows).enumerated() {
            grid.put(line.text, row: 1 + index, column: 0, style: line.style)
        }
        if state.confirmingDelete {
            _ = SceneChrome.promptLine("delete this memo? y/N", into: &grid)
        } else if let prompt = state.savePrompt {
            let label = "save to: "
            if let row = SceneChrome.promptLine(label + prompt.text, style: .plain, into: &grid) {
                grid.cursor = CursorPosition(row: row, column: min(grid.width - 1, (label + prompt.text).columns))
            }
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        } else if all.count > rows, rows > 0 {
            _ = SceneChrome.promptLine("line \(offset + 1)/\(all.count)  j/k scroll", style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            StatusBarView.draw(status, hints: hints, into: &grid, row: grid.height - 1)
        }
    }

    /// The detail's key bindings; `size` is the screen, for scrolling.
    public static func handle(_ key: Key, model: DetailViewModel, width: Int, height: Int) async -> ScreenCommand {
        let state = model.current
        if state.confirmingDelete {
            await model.answerDelete(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.savePrompt != nil {
            switch key {
            case .escape: model.cancelSave()
            case .enter: await model.confirmSave()
            case .backspace: model.editSavePath { $0.backspace() }
            case .character(let character): model.editSavePath { $0.insert(character) }
            case .paste(let text): model.editSavePath { $0.insert(text) }
            default: break
            }
            return .none
        }
        let rows = bodyRows(height: height)
        let limit = max(0, lines(state, width: width).count - rows)
        switch key {
        case .escape, .left, .character("q"), .backspace: model.back()
        case .character("e"), .enter: model.edit()
        case .character("d"), .delete: model.requestDelete()
        case .character("s"): model.share()
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
