import MemoModel
import MemoText
import MemoViewModels

/// The not-saved scene (`!` on the list): each write the server refused at replay, its text's first line and
/// the reason under it, the selected one in reverse; the hints say what can be done with it.
public enum NotSavedView {
    public static func draw(
        _ state: NotSavedState, status: ConnectionStatus, strings: Strings = .english, into grid: inout Grid
    ) {
        guard grid.height > 0, grid.width > 0 else { return }
        SceneChrome.title(strings.notSavedTitle, right: "\(state.entries.count)", into: &grid)
        grid.cursor = nil
        // Two rows per entry (its text, its reason), between the title and the prompt line.
        let perPage = max(1, (grid.height - 3) / 2)
        let first = max(0, state.selected - perPage + 1)
        if state.entries.isEmpty, grid.height > 3 {
            grid.put(TextLayout.truncate(strings.notSavedEmpty, to: grid.width), row: 1, column: 0, style: .dim)
        }
        for (offset, entry) in state.entries.dropFirst(first).prefix(perPage).enumerated() {
            let row = 1 + offset * 2
            guard row + 1 < grid.height - 1 else { break }
            let selected = first + offset == state.selected
            if selected { grid.fill(row: row, style: .reverse) }
            let headline = (selected ? "> " : "  ") + TextLayout.headline(of: entry.content)
            let style: CellStyle = selected ? .reverse : .plain
            grid.put(TextLayout.truncate(headline, to: grid.width), row: row, column: 0, style: style)
            let reason = entry.deletedElsewhere
                ? strings.notSavedDeletedElsewhere : strings.notSavedReason(entry.kind, entry.reason)
            grid.put(TextLayout.truncate("    " + reason, to: grid.width), row: row + 1, column: 0, style: .dim)
        }
        if state.confirmingDiscard != nil {
            _ = SceneChrome.promptLine(strings.notSavedConfirmDiscard, into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            let row = grid.height - 1
            StatusBarView.draw(status, hints: strings.notSavedHints, strings: strings, into: &grid, row: row)
        }
    }

    /// The scene's keys: j/k move, r retry, n save as new, s copy, d discard (y/N), Esc or q back.
    @FrontEnd
    public static func handle(_ key: Key, model: NotSavedViewModel) -> ScreenCommand {
        if model.current.confirmingDiscard != nil {
            model.answerDiscard(key == .character("y") || key == .character("Y"))
            return .none
        }
        switch key {
        case .character("j"), .down: model.moveDown()
        case .character("k"), .up: model.moveUp()
        case .character("r"): model.retry()
        case .character("n"): model.saveAsNew()
        case .character("s"): model.copy()
        case .character("d"), .delete: model.requestDiscard()
        case .escape, .character("q"), .left: model.back()
        default: break
        }
        return .none
    }
}
