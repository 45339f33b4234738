import MemoModel
import MemoText
import MemoViewModels

/// What a key asks of the app beyond the view model.
public enum ScreenCommand: Sendable {
    case none
    case quit
    /// Ctrl-E: hand the compose text to $EDITOR.
    case externalEditor(ComposeViewModel)
}

/// The list scene: one memo per line, newest first, the selected one in reverse, unconfirmed writes marked.
public enum ListView {
    /// Rows of memos at a grid height: all but the title, the prompt line and the status bar.
    static func bodyRows(height: Int) -> Int { max(1, height - 3) }

    public static func draw(
        _ state: ListState, status: ConnectionStatus, strings: Strings = .english, into grid: inout Grid
    ) {
        guard grid.height > 0, grid.width > 0 else { return }
        let count = state.filter.text.isEmpty ? "\(state.memos.count)" : "\(state.visible.count)/\(state.memos.count)"
        SceneChrome.title(strings.listTitle, right: count, into: &grid)
        grid.cursor = nil
        let firstRow = 1
        let lastRow = grid.height - 3
        if lastRow >= firstRow {
            let rows = lastRow - firstRow + 1
            let selected = state.selectedIndex ?? 0
            let offset = max(0, min(selected - rows + 1, state.visible.count - rows))
            if state.visible.isEmpty {
                let empty: String
                if !state.memos.isEmpty {
                    empty = strings.nothingMatches
                } else if !status.hasList {
                    // No cache and no answer: the list is unknown, not empty.
                    empty = strings.notConnected
                } else {
                    empty = strings.noMemosYet
                }
                grid.put(TextLayout.truncate("  " + empty, to: grid.width), row: firstRow, column: 0, style: .dim)
            }
            let tag = " " + strings.pendingTag + " "
            for (line, memo) in state.visible.dropFirst(offset).prefix(rows).enumerated() {
                let row = firstRow + line
                let isSelected = memo.id == state.selectedID
                let style = isSelected ? CellStyle.reverse : .plain
                grid.fill(row: row, style: style)
                let isPending = status.pendingIDs.contains(memo.id) && tag.columns + 8 < grid.width
                let room = grid.width - (isPending ? tag.columns : 0)
                let text = (isSelected ? "> " : "  ") + TextLayout.headline(of: memo.content)
                grid.put(TextLayout.truncate(text, to: room), row: row, column: 0, style: style)
                if isPending {
                    grid.put(tag, row: row, column: room, style: CellStyle(reverse: !isSelected, dim: true))
                }
            }
        }
        drawPrompt(state, strings: strings, into: &grid)
        if grid.height >= 2 {
            let hints = status.readOnly ? strings.listHintsReadOnly : strings.listHints
            StatusBarView.draw(status, hints: hints, strings: strings, into: &grid, row: grid.height - 1)
        }
        if state.helpVisible {
            SceneChrome.help(
                status.readOnly ? strings.helpLinesReadOnly : strings.helpLines, status: status, strings: strings,
                into: &grid)
        }
    }

    private static func drawPrompt(_ state: ListState, strings: Strings, into grid: inout Grid) {
        if let memo = state.pendingDelete {
            let name = TextLayout.truncate(TextLayout.headline(of: memo.content), to: max(1, grid.width / 2))
            _ = SceneChrome.promptLine(strings.deleteNamed(name), into: &grid)
        } else if state.isEditingFilter {
            SceneChrome.fieldLine("/", state.filter, into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        } else if !state.filter.text.isEmpty {
            _ = SceneChrome.promptLine(strings.filterShown(state.filter.text), style: .dim, into: &grid)
        }
    }

    /// The list's key bindings; `height` is the screen's, for PgUp/PgDn, and `status` says whether writes are
    /// allowed.
    @FrontEnd
    public static func handle(
        _ key: Key, model: ListViewModel, status: ConnectionStatus = .local, height: Int = 24
    ) async -> ScreenCommand {
        let state = model.current
        if state.pendingDelete != nil {
            model.answerDelete(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.isEditingFilter {
            switch key {
            case .escape: model.clearFilter()
            case .enter: model.commitFilter()
            case .up: model.moveUp()
            case .down: model.moveDown()
            default: model.editFilter { _ = $0.apply(key) }
            }
            return .none
        }
        if state.helpVisible {
            model.toggleHelp()
            return key == .character("q") ? .quit : .none
        }
        let page = bodyRows(height: height)
        switch key {
        case .character("j"), .down: model.moveDown()
        case .character("k"), .up: model.moveUp()
        case .pageDown: model.moveDown(by: page)
        case .pageUp: model.moveUp(by: page)
        case .character("g"), .home: model.moveToFirst()
        case .character("G"), .end: model.moveToLast()
        case .enter, .right: model.openSelected()
        case .character("n"), .character("d"), .delete:
            if status.readOnly {
                model.show(message: model.strings.readOnlyRefusal)
            } else if key == .character("n") {
                model.compose()
            } else {
                model.requestDelete()
            }
        case .character("!"): model.openNotSaved()
        case .character("T"): model.openTrash()
        case .character("/"): model.beginFilter()
        case .escape: model.clearFilter()
        case .character("?"), .control("g"): model.toggleHelp()
        case .character("q"): return .quit
        default: break
        }
        return .none
    }
}
