import MemoCore

/// The compose scene: the editor, soft-wrapped, with the cursor where the width table puts it.
public enum ComposeView {
    public static let hints = "Ctrl-S save  Esc cancel  Ctrl-E $EDITOR"

    public static func draw(_ state: ComposeState, mode: ComposeMode, status: ConnectionStatus, into grid: inout Grid) {
        guard grid.height > 0, grid.width > 0 else { return }
        let title: String
        if case .edit = mode { title = "메모 편집" } else { title = "새 메모" }
        SceneChrome.title(title, right: state.isDirty ? "modified" : "", into: &grid)
        grid.cursor = nil
        let rows = max(0, grid.height - 3)
        let layout = state.buffer.layout(width: grid.width)
        let offset = max(0, layout.cursorLine - rows + 1)
        for (index, line) in layout.lines.dropFirst(offset).prefix(rows).enumerated() {
            grid.put(line.text, row: 1 + index, column: 0)
        }
        if rows > 0 {
            grid.cursor = CursorPosition(
                row: 1 + layout.cursorLine - offset, column: min(grid.width - 1, layout.cursorColumn))
        }
        if let conflict = state.conflict {
            let what = conflict.theirs == nil ? "deleted elsewhere: o save as new" : "changed elsewhere: o overwrite"
            _ = SceneChrome.promptLine("\(what) · k keep theirs · Esc keep editing", into: &grid)
        } else if state.confirmingCancel {
            _ = SceneChrome.promptLine("discard your changes? y/N", into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            StatusBarView.draw(status, hints: hints, into: &grid, row: grid.height - 1)
        }
    }

    /// The editor's key bindings.
    public static func handle(_ key: Key, model: ComposeViewModel) async -> ScreenCommand {
        let state = model.current
        if state.conflict != nil {
            switch key {
            case .character("o"), .character("O"): await model.overwrite()
            case .character("k"), .character("K"): model.keepTheirs()
            case .escape: model.cancel()
            default: break
            }
            return .none
        }
        if state.confirmingCancel {
            model.answerCancel(key == .character("y") || key == .character("Y"))
            return .none
        }
        switch key {
        case .control("s"): await model.save()
        case .control("e"): return .externalEditor(model)
        case .escape: model.cancel()
        case .character(let character): model.edit { $0.insert(character) }
        case .paste(let text): model.edit { $0.insert(text: text) }
        case .enter: model.edit { $0.insertNewline() }
        case .tab: model.edit { $0.insert(text: "    ") }
        case .backspace: model.edit { $0.backspace() }
        case .delete: model.edit { $0.deleteForward() }
        case .left: model.edit { $0.moveLeft() }
        case .right: model.edit { $0.moveRight() }
        case .up: model.edit { $0.moveUp() }
        case .down: model.edit { $0.moveDown() }
        case .home, .control("a"): model.edit { $0.moveToLineStart() }
        case .end: model.edit { $0.moveToLineEnd() }
        default: break
        }
        return .none
    }
}
