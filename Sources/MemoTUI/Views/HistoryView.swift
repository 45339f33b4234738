import Foundation
import MemoModel
import MemoText
import MemoViewModels

/// The history scene (`h` on a memo): one kept version per line, newest first: revision, author, date, kind and the
/// first line of its text, the selected one in reverse; Enter shows a version's text, `d` its difference from the
/// one before (lines marked `+` and `-`), `r` restores it after y/N.
public enum HistoryView {
    /// Rows between the title and the prompt line.
    static func bodyRows(height: Int) -> Int { max(1, height - 3) }

    /// One version's line: "r12  alice  <date>  edited  first line".
    static func line(_ version: MemoVersion, strings: Strings, dateFormat: MemoDateFormat) -> String {
        return "r\(version.revision)  \(version.author)  \(dateFormat.string(from: version.date))  "
            + "\(strings.history.kindName(version.kind))  \(TextLayout.headline(of: version.content))"
    }

    /// The lines of the content or difference pane at `width`, each with its style.
    @FrontEnd
    static func paneLines(_ model: HistoryViewModel, width: Int) -> [(text: String, style: CellStyle)] {
        let state = model.current
        switch state.pane {
        case .versions:
            return []
        case .content:
            return TextLayout.wrap(state.selectedVersion?.content ?? "", to: width).map { ($0, CellStyle.plain) }
        case .difference:
            let lines = model.differenceLines
            if lines.allSatisfy({ $0.mark == .same }) {
                return [(model.strings.history.noDifference, .dim)]
            }
            return lines.flatMap { line -> [(text: String, style: CellStyle)] in
                let (mark, style): (String, CellStyle)
                switch line.mark {
                case .same: (mark, style) = ("  ", .plain)
                case .added: (mark, style) = ("+ ", CellStyle(bold: true, foreground: .green))
                case .removed: (mark, style) = ("- ", CellStyle(dim: true, foreground: .red))
                }
                return TextLayout.wrap(line.text, to: max(1, width - 2)).enumerated().map { index, piece in
                    ((index == 0 ? mark : "  ") + piece, style)
                }
            }
        }
    }

    @FrontEnd
    public static func draw(_ model: HistoryViewModel, status: ConnectionStatus, into grid: inout Grid) {
        guard grid.height > 0, grid.width > 0 else { return }
        let state = model.current
        let strings = model.strings
        grid.cursor = nil
        let rows = bodyRows(height: grid.height)
        var hints = status.readOnly ? strings.history.historyHintsReadOnly : strings.history.historyHints
        if state.pane == .versions {
            let name = state.memo.map { TextLayout.headline(of: $0.content) } ?? ""
            let title = name.isEmpty ? strings.history.historyTitle : "\(strings.history.historyTitle): \(name)"
            SceneChrome.title(title, right: state.isGone ? strings.deletedTag : "\(state.versions.count)", into: &grid)
            if !state.loaded || state.versions.isEmpty, grid.height > 3 {
                let empty = state.loaded ? strings.history.noVersions : strings.history.loading
                grid.put(TextLayout.truncate("  " + empty, to: grid.width), row: 1, column: 0, style: .dim)
            }
            let offset = max(0, min(state.selected - rows + 1, state.versions.count - rows))
            for (index, version) in state.versions.enumerated().dropFirst(offset).prefix(rows) {
                let row = 1 + index - offset
                let selected = index == state.selected
                let style: CellStyle = selected ? .reverse : .plain
                if selected { grid.fill(row: row, style: .reverse) }
                let text = (selected ? "> " : "  ") + line(version, strings: strings, dateFormat: model.dateFormat)
                grid.put(TextLayout.truncate(text, to: grid.width), row: row, column: 0, style: style)
            }
            let below = 1 + state.versions.count - offset
            if state.more, below <= rows {
                grid.put(TextLayout.truncate("  " + strings.history.olderNotShown, to: grid.width), row: below,
                         column: 0, style: .dim)
            }
        } else if let version = state.selectedVersion {
            let title: String
            if state.pane == .content {
                title = strings.history.versionHeading(
                    version.revision, version.author.description,
                    model.dateFormat.string(from: version.date))
            } else {
                title = strings.history.differenceHeading(version.revision, state.previousVersion?.revision)
            }
            SceneChrome.title(title, into: &grid)
            let all = paneLines(model, width: grid.width)
            let offset = max(0, min(state.scroll, all.count - rows))
            for (index, line) in all.dropFirst(offset).prefix(rows).enumerated() {
                grid.put(TextLayout.truncate(line.text, to: grid.width), row: 1 + index, column: 0, style: line.style)
            }
            hints = strings.history.paneHints
        }
        if let version = state.confirmingRestore {
            _ = SceneChrome.promptLine(strings.history.restoreRevision(version.revision), into: &grid)
        } else if let message = state.message {
            _ = SceneChrome.promptLine(message, style: .dim, into: &grid)
        }
        if grid.height >= 2 {
            StatusBarView.draw(status, hints: hints, strings: strings, into: &grid, row: grid.height - 1)
        }
    }

    /// The scene's keys: j/k move (or scroll a pane), Enter shows, `d` the difference, `r` restores (y/N), Esc
    /// goes back (from a pane to the versions, from the versions to the memo).
    @FrontEnd
    public static func handle(
        _ key: Key, model: HistoryViewModel, status: ConnectionStatus = .local, width: Int, height: Int
    ) -> ScreenCommand {
        let state = model.current
        if state.confirmingRestore != nil {
            model.answerRestore(key == .character("y") || key == .character("Y"))
            return .none
        }
        if state.pane != .versions {
            let rows = bodyRows(height: height)
            let limit = max(0, paneLines(model, width: width).count - rows)
            switch key {
            case .escape, .left, .character("q"), .backspace, .enter: model.back()
            case .character("j"), .down: model.scroll(by: 1, limit: limit)
            case .character("k"), .up: model.scroll(by: -1, limit: limit)
            case .character(" "), .pageDown: model.scroll(by: max(1, rows - 1), limit: limit)
            case .pageUp: model.scroll(by: -max(1, rows - 1), limit: limit)
            case .character("d"): model.showDifference()
            default: break
            }
            return .none
        }
        switch key {
        case .escape, .left, .character("q"), .backspace: model.back()
        case .character("j"), .down: model.moveDown()
        case .character("k"), .up: model.moveUp()
        case .enter, .right: model.showContent()
        case .character("d"): model.showDifference()
        case .character("r"):
            if status.readOnly {
                model.show(message: model.strings.readOnlyRefusal)
            } else {
                model.requestRestore()
            }
        default: break
        }
        return .none
    }
}
