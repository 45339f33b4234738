import MemoCore
import MemoText
import MemoViewModels

/// The bottom line of every scene: server, connection state, pending writes, then key hints.
public enum StatusBarView {
    /// Draws the bar on `row`; the connection part wins over the hints when the line is short.
    public static func draw(
        _ status: ConnectionStatus, hints: String, strings: Strings = .english, into grid: inout Grid, row: Int
    ) {
        grid.fill(row: row, style: .reverse)
        var left: String
        if let problem = status.problem, status.state != .live {
            // Retrying will not fix this one: say why instead of "offline", and how to read the whole message.
            left = " ✗ \(status.server) · \(problem.summary(strings)) (\(strings.moreKey))"
        } else {
            let marker: String
            switch status.state {
            case .live: marker = "●"
            case .connecting, .reconnecting, .notAnswering: marker = "◌"
            case .offline: marker = "○"
            }
            left = " \(marker) \(status.server) · \(status.state.label(strings))"
        }
        if status.readOnly { left += " · \(strings.readOnly)" }
        if status.pendingWrites > 0 { left += " · \(strings.pending(status.pendingWrites))" }
        left += " "
        let shownLeft = TextLayout.truncate(left, to: grid.width)
        let used = grid.put(shownLeft, row: row, column: 0, style: .reverse)
        let room = grid.width - used
        guard room > 2 else { return }
        let hintText = TextLayout.truncate("│ " + hints, to: room)
        grid.put(hintText, row: row, column: used, style: CellStyle(reverse: true, dim: true))
    }
}

/// Pieces every scene view uses.
enum SceneChrome {
    /// The title line: reverse and bold across the width.
    static func title(_ text: String, right: String = "", into grid: inout Grid) {
        guard grid.height > 0 else { return }
        let style = CellStyle(bold: true, reverse: true)
        grid.fill(row: 0, style: style)
        let rightWidth = right.columns
        let titleRoom = max(0, grid.width - (rightWidth > 0 ? rightWidth + 2 : 0))
        grid.put(TextLayout.truncate(" " + text, to: titleRoom), row: 0, column: 0, style: style)
        if rightWidth > 0, rightWidth + 1 < grid.width {
            grid.put(right, row: 0, column: grid.width - rightWidth - 1, style: style)
        }
    }

    /// A one-line prompt or message just above the status bar.
    static func promptLine(_ text: String, style: CellStyle = .bold, into grid: inout Grid) -> Int? {
        let row = grid.height - 2
        guard row >= 1 else { return nil }
        grid.fill(row: row)
        grid.put(TextLayout.truncate(text, to: grid.width), row: row, column: 0, style: style)
        return row
    }

    /// A one-line field above the status bar: its label, its text (in reverse while selected, so that typing
    /// visibly replaces it) and the cursor at its end.
    static func fieldLine(_ label: String, _ input: LineInput, into grid: inout Grid) {
        guard let row = promptLine(label, style: .plain, into: &grid) else { return }
        let start = min(grid.width, label.columns)
        let text = TextLayout.truncate(input.text, to: max(0, grid.width - start))
        let used = grid.put(text, row: row, column: start, style: input.isSelected ? .reverse : .plain)
        grid.cursor = CursorPosition(row: row, column: min(grid.width - 1, start + used))
    }
}
