import MemoModel
import MemoText
import MemoViewModels

/// The compose scene: the editor, soft-wrapped, with the cursor where the width table puts it.
public enum ComposeView {
    public static func draw(
        _ state: ComposeState, mode: ComposeMode, status: ConnectionStatus, strings: Strings = .english,
        into grid: inout Grid
    ) {
        guard grid.height > 0, grid.width > 0 else { return }
        let title = mode.editedMemo == nil ? strings.newTitle : strings.editTitle
        SceneChrome.title(title, right: state.isDirty ? strings.modifiedTag : "", into: &grid)
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
            // Two lines: what they did (their revision and first line) above the choices.
            let what: String
            let choices: String
            if let theirs = conflict.theirs {
                what = strings.conflictChanged(TextLayout.headline(of: theirs.content), theirs.revision)
                choices = strings.conflictChoices
            } else {
                what = strings.conflictDeleted
                choices = strings.conflictDeletedChoices
            }
            if grid.height >= 4 {
                grid.fill(row: grid.height - 3)
                grid.put(TextLayout.truncate(what, to: grid.width), row: grid.height - 3, column: 0, style: .bold)
            }
            _ = SceneChrome.promptLine(choices, into: &grid)
        } else if state.saveTimedOut {
            // Two lines: what happened (the text is kept) above the choices.
            if grid.height >= 4, let message = state.message {
                grid.fill(row: grid.height - 3)
                grid.put(TextLayout.truncate(message, to: grid.width), row: grid.height - 3, column: 0, style: .bold)
            }
            _ = SceneChrome.promptLine(strings.saveTimeoutChoices, into: &grid)
        } else if state.confirmingCancel {
            _ = SceneChrome.promptLine(strings.discardChanges, into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            StatusBarView.draw(
                status, hints: strings.composeHints, strings: strings, inEditor: true, into: &grid,
                row: grid.height - 1)
        }
        if state.helpVisible {
            SceneChrome.help(strings.composeHelpLines, status: status, strings: strings, into: &grid)
        }
    }

    /// The editor's key bindings; `width` is the screen's, which the text is wrapped to (Up and Down move by
    /// screen row). A save returns at once (it runs as a child task): keys keep editing while it waits, and a save
    /// with no answer in time asks "r retry · p keep as pending · Esc keep editing".
    @FrontEnd
    public static func handle(_ key: Key, model: ComposeViewModel, width: Int = 80) async -> ScreenCommand {
        let state = model.current
        if state.helpVisible {
            model.toggleHelp()
            // `?` is text in the editor, but with the help open it is the key that closes it, as in the other
            // scenes; any other key closes it and does what it does, so that nothing typed is lost.
            switch key {
            case .escape, .control("g"), .character("?"): return .none
            default: break
            }
        }
        if state.saveTimedOut {
            switch key {
            case .character("r"), .character("R"): model.retrySave()
            case .character("p"), .character("P"): model.keepPending()
            case .escape: model.dismissTimeout()
            default: break
            }
            return .none
        }
        if state.conflict != nil {
            switch key {
            case .character("o"), .character("O"): model.overwrite()
            case .character("k"), .character("K"): model.keepTheirs()
            case .character("m"), .character("M"): model.mergeWithTheirs()
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
        case .control("s"): model.save()
        case .control("e"): return .externalEditor(model)
        case .control("g"): model.toggleHelp()
        case .escape: model.cancel()
        case .character(let character): model.edit { $0.insert(character) }
        case .paste(let text): model.edit { $0.insert(text: text) }
        case .enter: model.edit { $0.insertNewline() }
        case .tab: model.edit { $0.insert(text: "    ") }
        case .backspace: model.edit { $0.backspace() }
        case .delete: model.edit { $0.deleteForward() }
        case .left: model.edit { $0.moveLeft() }
        case .right: model.edit { $0.moveRight() }
        case .up: model.edit { $0.moveUp(width: width) }
        case .down: model.edit { $0.moveDown(width: width) }
        case .home, .control("a"): model.edit { $0.moveToLineStart() }
        case .end: model.edit { $0.moveToLineEnd() }
        default: break
        }
        return .none
    }
}
