import MemoCore
import MemoText

/// What a key asks of the app beyond the view model.
public enum ScreenCommand: Sendable {
    case none
    case quit
    /// Ctrl-E: hand the compose text to $EDITOR.
    case externalEditor(ComposeViewModel)
}

/// The list scene: one memo per line, newest first, the selected one in reverse.
public enum ListView {
    public static let hints = "j/k move  Enter open  n new  d delete  / filter  ? help  q quit"

    public static func draw(_ state: ListState, status: ConnectionStatus, into grid: inout Grid) {
        guard grid.height > 0, grid.width > 0 else { return }
        let count = state.filter.text.isEmpty ? "\(state.memos.count)" : "\(state.visible.count)/\(state.memos.count)"
        SceneChrome.title("메모 목록", right: count, into: &grid)
        grid.cursor = nil
        let firstRow = 1
        let lastRow = grid.height - 3
        if lastRow >= firstRow {
            let rows = lastRow - firstRow + 1
            let selected = state.selectedIndex ?? 0
            let offset = max(0, min(selected - rows + 1, state.visible.count - rows))
            if state.visible.isEmpty {
                let empty = state.memos.isEmpty ? "no memos yet: n writes one" : "nothing matches the filter"
                grid.put(TextLayout.truncate("  " + empty, to: grid.width), row: firstRow, column: 0, style: .dim)
            }
            for (line, memo) in state.visible.dropFirst(offset).prefix(rows).enumerated() {
                let row = firstRow + line
                let isSelected = memo.id == state.selectedID
                let style = isSelected ? CellStyle.reverse : .plain
                grid.fill(row: row, style: style)
                let text = (isSelected ? "> " : "  ") + SceneChrome.headline(of: memo.content)
                grid.put(TextLayout.truncate(text, to: grid.width), row: row, column: 0, style: style)
            }
        }
        drawPrompt(state, into: &grid)
        if grid.height >= 2 {
            StatusBarView.draw(status, hints: hints, into: &grid, row: grid.height - 1)
        }
        if state.helpVisible { drawHelp(into: &grid) }
    }

    private static func drawPrompt(_ state: ListState, into grid: inout Grid) {
        if let memo = state.pendingDelete {
            let name = TextLayout.truncate(SceneChrome.headline(of: memo.content), to: max(1, grid.width / 2))
            _ = SceneChrome.promptLine("delete “\(name)”? y/N", into: &grid)
        } else if state.isEditingFilter {
            if let row = SceneChrome.promptLine("/" + state.filter.text, style: .plain, into: &grid) {
                let column = min(grid.width - 1, 1 + state.filter.text.columns)
                grid.cursor = CursorPosition(row: row, column: column)
            }
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        } else if !state.filter.text.isEmpty {
            _ = SceneChrome.promptLine("filter: " + state.filter.text + "  (Esc clears)", style: .dim, into: &grid)
        }
    }

    static let helpLines = [
        "j/k ↑/↓   move", "g/G       first/last", "Enter     open", "n         new memo", "d         delete",
        "/         filter (Esc clears)", "?         this help", "q Ctrl-C  quit",
    ]

    private static func drawHelp(into grid: inout Grid) {
        let inner = min(grid.width - 4, (helpLines.map(\.columns).max() ?? 0) + 2)
        guard inner > 2, grid.height >= 4 else { return }
        let lines = Array(helpLines.prefix(grid.height - 4))
        let left = (grid.width - inner - 2) / 2
        let top = max(1, (grid.height - lines.count - 2) / 2)
        let border = CellStyle(bold: true)
        grid.put("┌" + String(repeating: "─", count: inner) + "┐", row: top, column: left, style: border)
        for (index, line) in lines.enumerated() {
            grid.put("│", row: top + 1 + index, column: left, style: border)
            grid.put(TextLayout.pad(" " + line, to: inner), row: top + 1 + index, column: left + 1)
            grid.put("│", row: top + 1 + index, column: left + inner + 1, style: border)
        }
        grid.put("└" + String(repeating: "─", count: inner) + "┘", row: top + lines.count + 1, column: left, style: border)
    }

    /// The list's key bindings.
    public static func handle(_ key: Key, model: ListViewModel) async -> ScreenCommand {
        let state = model.current
        if state.pendingDelete != nil {
            await model.answerDelete(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.isEditingFilter {
            switch key {
            case .escape: model.clearFilter()
            case .enter: model.commitFilter()
            case .backspace: model.editFilter { $0.backspace() }
            case .character(let character): model.editFilter { $0.insert(character) }
            case .paste(let text): model.editFilter { $0.insert(text) }
            case .up: model.moveUp()
            case .down: model.moveDown()
            default: break
            }
            return .none
        }
        if state.helpVisible {
            model.toggleHelp()
            return key == .character("q") ? .quit : .none
        }
        switch key {
        case .character("j"), .down: model.moveDown()
        case .character("k"), .up: model.moveUp()
        case .pageDown: model.moveDown(by: 10)
        case .pageUp: model.moveUp(by: 10)
        case .character("g"), .home: model.moveToFirst()
        case .character("G"), .end: model.moveToLast()
        case .enter, .right: model.openSelected()
        case .character("n"): model.compose()
        case .character("d"), .delete: model.requestDelete()
        case .character("/"): model.beginFilter()
        case .escape: model.clearFilter()
        case .character("?"): model.toggleHelp()
        case .character("q"): return .quit
        default: break
        }
        return .none
    }
}
