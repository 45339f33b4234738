import Foundation
import MemoModel
import MemoText
import MemoViewModels

/// The trash scene (`T` on the list): each deleted memo's first line and, under it, who deleted it and when, the
/// last deleted first; `r` brings the selected one back after y/N.
public enum TrashView {
    @FrontEnd
    public static func draw(_ model: TrashViewModel, status: ConnectionStatus, into grid: inout Grid) {
        guard grid.height > 0, grid.width > 0 else { return }
        let state = model.current
        let strings = model.strings
        SceneChrome.title(strings.history.trashTitle, right: "\(state.items.count)", into: &grid)
        grid.cursor = nil
        // Two rows per memo (its first line, who deleted it and when), between the title and the prompt line.
        let perPage = max(1, (grid.height - 3) / 2)
        let first = max(0, state.selected - perPage + 1)
        if state.items.isEmpty, grid.height > 3 {
            let empty = state.loaded ? strings.history.trashEmpty : strings.history.loading
            grid.put(TextLayout.truncate("  " + empty, to: grid.width), row: 1, column: 0, style: .dim)
        }
        for (offset, item) in state.items.dropFirst(first).prefix(perPage).enumerated() {
            let row = 1 + offset * 2
            guard row + 1 < grid.height - 1 else { break }
            let selected = first + offset == state.selected
            if selected { grid.fill(row: row, style: .reverse) }
            let headline = (selected ? "> " : "  ") + TextLayout.headline(of: item.memo.content)
            grid.put(TextLayout.truncate(headline, to: grid.width), row: row, column: 0,
                     style: selected ? .reverse : .plain)
            let by = strings.history.deletedBy(
                item.deletedBy.description, model.dateFormat.string(from: item.deletedDate))
            grid.put(TextLayout.truncate("    " + by, to: grid.width), row: row + 1, column: 0, style: .dim)
        }
        if let item = state.confirmingRestore {
            let name = TextLayout.truncate(TextLayout.headline(of: item.memo.content), to: max(1, grid.width / 2))
            _ = SceneChrome.promptLine(strings.history.bringBack(name), into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            let hints = status.readOnly ? strings.history.trashHintsReadOnly : strings.history.trashHints
            StatusBarView.draw(status, hints: hints, strings: strings, into: &grid, row: grid.height - 1)
        }
    }

    /// The scene's keys: j/k move, `r` brings back (y/N), Esc or q back to the list.
    @FrontEnd
    public static func handle(_ key: Key, model: TrashViewModel, status: ConnectionStatus = .local) -> ScreenCommand {
        if model.current.confirmingRestore != nil {
            model.answerRestore(key == .character("y") || key == .character("Y"))
            return .none
        }
        switch key {
        case .character("j"), .down: model.moveDown()
        case .character("k"), .up: model.moveUp()
        case .character("r"):
            if status.readOnly {
                model.show(message: model.strings.readOnlyRefusal)
            } else {
                model.requestRestore()
            }
        case .escape, .character("q"), .left, .backspace: model.back()
        default: break
        }
        return .none
    }
}
