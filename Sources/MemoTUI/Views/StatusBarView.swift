import Foundation
import MemoModel
import MemoText
import MemoViewModels

/// The bottom line of every scene: server, connection state with its reason, pending writes, then key hints.
///
/// On a short line the scene's main keys and the way to the help (priority 0) always fit: the connection part
/// gives up the server's name first, then is cut with "…" (the help box, `?`, says it whole); the other hints
/// come as room allows, the least needed dropped first, in the order the scene lists them.
public enum StatusBarView {
    /// The gap between two hints; one space when even the needed ones would not fit otherwise.
    static let hintGap = "  "
    static let tightGap = " "

    /// Draws the bar on `row`; `inEditor` names Ctrl-G rather than `?` as the key that says why the connection
    /// fails (`?` is text there).
    public static func draw(
        _ status: ConnectionStatus, hints: [KeyHint], strings: Strings = .english, inEditor: Bool = false,
        into grid: inout Grid, row: Int
    ) {
        grid.fill(row: row, style: .reverse)
        let needed = hints.filter { $0.priority == 0 }
        let neededWidth = needed.isEmpty ? 0 : ("│ " + joined(needed, gap: tightGap)).columns
        let leftRoom = max(0, grid.width - neededWidth)
        var left = connectionText(status, strings: strings, withServer: true, inEditor: inEditor)
        if left.columns > leftRoom {
            left = connectionText(status, strings: strings, withServer: false, inEditor: inEditor)
        }
        let used = grid.put(TextLayout.truncate(left, to: max(leftRoom, min(grid.width, 12))), row: row, column: 0,
                            style: .reverse)
        let room = grid.width - used
        guard room > 2, !hints.isEmpty else { return }
        let hintText = "│ " + fitting(hints, in: room - 2)
        grid.put(
            TextLayout.truncate(hintText, to: room), row: row, column: used, style: CellStyle(reverse: true, dim: true))
    }

    /// The connection part: marker, server, state with its reason (or the problem), read-only, pending.
    static func connectionText(
        _ status: ConnectionStatus, strings: Strings, withServer: Bool, inEditor: Bool = false
    ) -> String {
        var parts: [String] = []
        let marker: String
        if status.problem != nil, status.state != .live {
            marker = "✗"
        } else {
            switch status.state {
            case .live: marker = "●"
            case .connecting, .reconnecting, .notAnswering, .unconfirmed: marker = "◌"
            case .offline: marker = "○"
            }
        }
        if withServer { parts.append(status.server) }
        if let problem = status.problem, status.state != .live {
            // Retrying will not fix this one: say why, and how to read the whole message.
            parts.append("\(problem.summary(strings)) (\(inEditor ? strings.moreKeyInEditor : strings.moreKey))")
        } else {
            parts.append(status.stateLabel(strings))
        }
        if status.readOnly { parts.append(strings.readOnly) }
        if status.pendingWrites > 0 { parts.append(strings.pending(status.pendingWrites)) }
        return " \(marker) " + parts.joined(separator: " · ") + " "
    }

    /// The hints that fit in `columns`, joined, in the scene's order: the needed ones, then each other one that
    /// still fits, the most needed first; the needed ones closer together if that is what it takes.
    static func fitting(_ hints: [KeyHint], in columns: Int) -> String {
        var kept = hints.map { $0.priority == 0 }
        func text(_ gap: String) -> String { joined(zip(hints, kept).filter(\.1).map(\.0), gap: gap) }
        guard text(hintGap).columns <= columns else { return text(tightGap) }
        let optional = hints.indices.filter { hints[$0].priority > 0 }.sorted {
            (hints[$0].priority, $0) < (hints[$1].priority, $1)
        }
        for index in optional {
            kept[index] = true
            if text(hintGap).columns > columns { kept[index] = false }
        }
        return text(hintGap)
    }

    static func joined(_ hints: [KeyHint], gap: String) -> String { hints.map(\.text).joined(separator: gap) }
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

    /// The help box over a scene: first the connection as a whole (the bar may have cut it), and the whole
    /// reason it fails when retrying will not fix it; then the scene's keys.
    static func help(_ keyLines: [String], status: ConnectionStatus, strings: Strings, into grid: inout Grid) {
        let room = max(10, grid.width - 8)
        var lines = TextLayout.wrap(
            TextLayout.displayable(StatusBarView.connectionText(status, strings: strings, withServer: true)
                .trimmingCharacters(in: .whitespaces)), to: room)
        if let problem = status.problem, status.state != .live {
            lines += TextLayout.wrap("✗ " + problem.detail, to: room)
        }
        lines += [""] + keyLines
        let rows = max(0, grid.height - 4)
        if lines.count > rows {
            // Short of rows: the keys, first, after the reason retrying will not fix, if there is one.
            lines = status.problem.map { TextLayout.wrap("✗ " + $0.detail, to: room) + [""] } ?? []
            lines = Array((status.state == .live ? [] : lines) + keyLines).prefix(rows).map { $0 }
        }
        let inner = min(grid.width - 4, (lines.map(\.columns).max() ?? 0) + 2)
        guard inner > 2, grid.height >= 4 else { return }
        let shown = lines
        let left = (grid.width - inner - 2) / 2
        let top = max(1, (grid.height - shown.count - 2) / 2)
        let border = CellStyle(bold: true)
        grid.put("┌" + String(repeating: "─", count: inner) + "┐", row: top, column: left, style: border)
        for (index, line) in shown.enumerated() {
            grid.put("│", row: top + 1 + index, column: left, style: border)
            grid.put(TextLayout.pad(TextLayout.truncate(" " + line, to: inner), to: inner), row: top + 1 + index,
                     column: left + 1)
            grid.put("│", row: top + 1 + index, column: left + inner + 1, style: border)
        }
        grid.put("└" + String(repeating: "─", count: inner) + "┘", row: top + shown.count + 1, column: left,
                 style: border)
        grid.cursor = nil
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
