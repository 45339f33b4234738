import Foundation
import Glibc
import MemoModel
import MemoText

/// How a command writes: for people on a terminal, or plain for scripts, or JSON lines.
public struct OutputStyle: Sendable, Hashable {
    public var json: Bool
    /// stdout is a terminal: tables with short ids and local dates.
    public var human: Bool
    /// Colors (only for people, and never with NO_COLOR set).
    public var color: Bool
    /// The terminal's width: list and watch lines for people are cut to it, so that each memo stays on one
    /// line. Nil when unknown, and for scripts and JSON, whose lines are never cut.
    public var columns: Int?
    /// Ask stdout's terminal for its width at each line instead of using `columns`, so that a long `watch`
    /// follows a resize (`detect` sets it when stdout is a terminal).
    public var followsTerminal: Bool
    /// The form `-o` chose, nil when stdout decides (`json` mirrors `.json`).
    public var format: OutputFormat?

    public init(
        json: Bool, human: Bool, color: Bool, columns: Int? = nil, followsTerminal: Bool = false,
        format: OutputFormat? = nil
    ) {
        let json = json || format == .json
        let human = human && (format == nil || format == .json)
        self.format = json ? .json : format
        self.json = json
        self.human = human
        self.color = color && human && !json
        self.columns = human && !json ? columns.flatMap { $0 > 0 ? $0 : nil } : nil
        self.followsTerminal = followsTerminal && human && !json
    }

    /// The style for this process: human when stdout is a terminal, color unless NO_COLOR or TERM=dumb, lines
    /// cut to the terminal's width.
    /// `format` (`-o`) overrides what stdout is: only without one is the output for people on a terminal.
    public static func detect(
        json: Bool, format: OutputFormat? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> OutputStyle {
        let terminal = isatty(STDOUT_FILENO) == 1
        let noColor = !(environment["NO_COLOR"] ?? "").isEmpty || environment["TERM"] == "dumb"
        return OutputStyle(
            json: json, human: terminal, color: !noColor, columns: terminalColumns(), followsTerminal: terminal,
            format: format)
    }

    /// The width of stdout's terminal (TIOCGWINSZ), or nil when it is not a terminal or does not say.
    static func terminalColumns() -> Int? {
        var size = winsize()
        let asked = withUnsafeMutablePointer(to: &size) { ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), $0) } == 0
        return asked && size.ws_col > 0 ? Int(size.ws_col) : nil
    }

    /// The width to cut lines for people to now.
    var currentColumns: Int? {
        guard human, !json else { return nil }
        return followsTerminal ? OutputStyle.terminalColumns() ?? columns : columns
    }
}

/// Formats memos and changes as lines for one `OutputStyle`.
public struct MemoFormatter: Sendable {
    public let style: OutputStyle

    public init(style: OutputStyle) {
        self.style = style
    }

    /// The first line of a memo's content, with tabs and carriage returns as spaces (plain output is
    /// tab-separated).
    public static func firstLine(_ content: String) -> String {
        // By UTF-8 bytes: "\r\n" is one Character and must end the line like "\n", and an ASCII byte never
        // occurs inside a multi-byte sequence. Most lines need no replacement and are one slice of the content
        // (appending scalar by scalar made this half of `memo-client list`'s CPU).
        let utf8 = content.utf8
        let end = utf8.firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
        let line = utf8[..<end]
        guard line.contains(where: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }) else {
            return String(Substring(line))
        }
        return String(decoding: line.map { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") ? 0x20 : $0 },
                      as: UTF8.self)
    }

    /// The first 8 characters of the id.
    public static func shortID(_ id: UUID) -> String {
        String(id.lowercasedString.prefix(8))
    }

    /// `2026-11-30 12:26` in the local time zone.
    public static func localDate(micros: Int64) -> String {
        var seconds = time_t(micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min))"
    }

    private func paint(_ text: String, _ code: String) -> String {
        style.color ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// The first line of `content` for people, control characters made visible, cut with "…" to what is left
    /// of the terminal's width after `used` columns.
    private func humanFirstLine(_ content: String, after used: Int) -> String {
        let line = TextLayout.displayable(Self.firstLine(content))
        guard let columns = style.currentColumns else { return line }
        return TextLayout.truncate(line, to: max(columns - used, 1))
    }

    /// One memo as a list line: JSON object; `id<TAB>revision<TAB>insertDate<TAB>first line`; or, for people,
    /// `shortid  local date  first line`, cut to the terminal's width.
    public func line(_ memo: Memo) -> String {
        if style.json { return MemoJSON.object(memo, author: true) }
        if style.format == .ids { return memo.id.lowercasedString }
        if style.format == .wide { return Self.wideLine(memo) }
        if style.human {
            let id = Self.shortID(memo.id), date = Self.localDate(micros: memo.insertMicros)
            return paint(id, "33") + "  " + paint(date, "2") + "  "
                + humanFirstLine(memo.content, after: id.count + 2 + date.count + 2)
        }
        return memo.id.lowercasedString + "\t" + String(memo.revision) + "\t"
            + Timestamp.iso8601(micros: memo.insertMicros) + "\t" + Self.firstLine(memo.content)
    }

    /// One version as a `log` line: `revision<TAB>date<TAB>author<TAB>kind<TAB>first line` (the date in ISO 8601
    /// UTC, the author's name or `-`); for people the local date and the first line cut to the terminal's width.
    public func line(_ version: MemoVersion) -> String {
        if style.human {
            let head = String(version.revision) + "  " + Self.localDate(micros: version.micros) + "  "
                + version.author.description + "  " + version.kind.name + "  "
            return paint(head, "2") + humanFirstLine(version.content, after: head.count)
        }
        return String(version.revision) + "\t" + Timestamp.iso8601(micros: version.micros) + "\t"
            + version.author.description + "\t" + version.kind.name + "\t" + Self.firstLine(version.content)
    }

    /// One deleted memo as a `trash` line: `id<TAB>revision<TAB>deletedDate<TAB>deleted by<TAB>first line` (the
    /// delete's revision and date); for people the short id, the local date, who deleted it and the first line.
    public func line(_ entry: TrashEntry) -> String {
        if style.human {
            let id = Self.shortID(entry.memo.id)
            let head = "  " + Self.localDate(micros: entry.deletedMicros) + "  " + entry.deletedBy.description + "  "
            return paint(id, "33") + paint(head, "2") + humanFirstLine(entry.memo.content, after: id.count + head.count)
        }
        return entry.memo.id.lowercasedString + "\t" + String(entry.revision) + "\t"
            + Timestamp.iso8601(micros: entry.deletedMicros) + "\t" + entry.deletedBy.description + "\t"
            + Self.firstLine(entry.memo.content)
    }

    /// One change as a watch line: the JSON change object; `kind<TAB>id<TAB>revision<TAB>updateDate<TAB>first
    /// line` (for a delete, the server sets updateDate to the delete's time); or, for people, `+`/`~`/`-`, the
    /// short id, the local date and the first line, cut to the terminal's width as it is when the line is printed.
    public func line(_ change: Change) -> String {
        let (mark, color) = switch change.kind {
        case .created: ("+", "32")
        case .updated: ("~", "33")
        case .deleted: ("-", "31")
        }
        return watchLine(type: change.kind.name, mark: mark, color: color, revision: change.revision,
                         memo: change.memo)
    }

    /// A memo that was there when a watch began, in the shape of a change line with the type `existing` (as
    /// kubectl's `--output-watch-events` does), so that a script reads the first list and the changes alike.
    public func existing(_ memo: Memo) -> String {
        watchLine(type: "existing", mark: " ", color: "0", revision: memo.revision, memo: memo)
    }

    /// The line `watch` prints when the server no longer held the changes it missed (history-gone): the changes
    /// in between are unknown, and the whole list follows as `existing` lines. JSON
    /// `{"event":"resync","revision":N}`; `resync<TAB>N`; for people, one sentence saying so.
    public func resync(revision: UInt64) -> String {
        if style.json { return "{\"event\":\"resync\",\"revision\":" + String(revision) + "}" }
        if style.human {
            return paint("=", "35") + " resync at revision \(revision): changes made while away are no longer "
                + "held by the server; the whole list follows"
        }
        return "resync\t" + String(revision)
    }

    private func watchLine(type: String, mark: String, color: String, revision: UInt64, memo: Memo) -> String {
        if style.json { return MemoJSON.event(type: type, revision: revision, memo: memo) }
        if style.human {
            let id = Self.shortID(memo.id), date = Self.localDate(micros: memo.updateMicros)
            return paint(mark, color) + " " + paint(id, "33") + "  " + paint(date, "2") + "  "
                + humanFirstLine(memo.content, after: mark.count + 1 + id.count + 2 + date.count + 2)
        }
        return type + "\t" + memo.id.lowercasedString + "\t" + String(revision) + "\t"
            + Timestamp.iso8601(micros: memo.updateMicros) + "\t" + Self.firstLine(memo.content)
    }

    /// A whole memo for `show`: for scripts the content's bytes exactly as stored and one newline, always (so
    /// that `show ID | edit ID -`, which drops one final newline, gives back the same bytes); for people with its
    /// control characters made visible.
    public func detail(_ memo: Memo) -> String {
        if style.json { return MemoJSON.object(memo, author: true) + "\n" }
        // An explicit -o tsv, ids or wide: the memo as one line of that form, not its content.
        if style.format != nil { return line(memo) + "\n" }
        if !style.human { return memo.content + "\n" }
        var text = paint("id", "2") + "        " + memo.id.lowercasedString + "\n"
        text += paint("revision", "2") + "  " + String(memo.revision) + "\n"
        text += paint("created", "2") + "   " + Self.localDate(micros: memo.insertMicros) + "\n"
        text += paint("updated", "2") + "   " + Self.localDate(micros: memo.updateMicros) + "\n"
        text += paint("author", "2") + "    " + memo.author.description + "\n\n"
        let content = TextLayout.displayable(memo.content)
        text += content
        if !content.hasSuffix("\n") { text += "\n" }
        return text
    }

    /// What `add`, `edit` and `rm` print about the memo they wrote.
    public func written(_ memo: Memo, verb: String) -> String {
        if style.json || !style.human { return line(memo) }
        return verb + " " + paint(Self.shortID(memo.id), "33") + " (revision \(memo.revision))"
    }
}
