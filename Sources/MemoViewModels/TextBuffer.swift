import MemoText

/// A multi-line text editor's model: lines of graphemes and a cursor counted in graphemes.
///
/// Where the cursor is on screen comes from the width table (`cursorScreenColumn`, `layout(width:)`): a Hangul
/// syllable moves it two columns, a combining mark none.
public struct TextBuffer: Sendable, Hashable {
    public private(set) var lines: [[Character]]
    /// The cursor's line.
    public private(set) var row = 0
    /// The cursor's grapheme index in its line (0...count).
    public private(set) var column = 0
    /// The screen column that up and down aim for, kept across short lines.
    private var preferredColumn: Int?

    /// A buffer holding `text`, with the cursor at its end.
    public init(_ text: String = "") {
        lines = TextLayout.paragraphs(of: text).map { Array($0) }
        if lines.isEmpty { lines = [[]] }
        row = lines.count - 1
        column = lines[row].count
    }

    public var text: String { lines.map { String($0) }.joined(separator: "\n") }

    /// Columns between the start of the line and the cursor.
    public var cursorScreenColumn: Int { ColumnWidth.width(of: lines[row], prefix: column) }

    // MARK: Editing

    /// Inserts one grapheme; a newline breaks the line. A combining mark typed after a letter joins it, as the
    /// terminal would have drawn them.
    public mutating func insert(_ character: Character) {
        if character.isNewline {
            insertNewline()
            return
        }
        preferredColumn = nil
        if column > 0 {
            let joined = String(lines[row][column - 1]) + String(character)
            if joined.count == 1 {
                lines[row][column - 1] = joined.first!
                return
            }
        }
        lines[row].insert(character, at: column)
        column += 1
    }

    /// Inserts pasted text, line breaks included.
    public mutating func insert(text: String) {
        for character in text { insert(character) }
    }

    /// Enter: the rest of the line moves to a new line below.
    public mutating func insertNewline() {
        preferredColumn = nil
        let rest = Array(lines[row][column...])
        lines[row].removeSubrange(column...)
        lines.insert(rest, at: row + 1)
        row += 1
        column = 0
    }

    /// Deletes the grapheme before the cursor, or joins the line to the one above.
    public mutating func backspace() {
        preferredColumn = nil
        if column > 0 {
            lines[row].remove(at: column - 1)
            column -= 1
        } else if row > 0 {
            let line = lines.remove(at: row)
            row -= 1
            column = lines[row].count
            lines[row].append(contentsOf: line)
        }
    }

    /// Deletes the grapheme under the cursor, or joins the next line to this one.
    public mutating func deleteForward() {
        preferredColumn = nil
        if column < lines[row].count {
            lines[row].remove(at: column)
        } else if row + 1 < lines.count {
            let next = lines.remove(at: row + 1)
            lines[row].append(contentsOf: next)
        }
    }

    // MARK: Moving

    public mutating func moveLeft() {
        preferredColumn = nil
        if column > 0 {
            column -= 1
        } else if row > 0 {
            row -= 1
            column = lines[row].count
        }
    }

    public mutating func moveRight() {
        preferredColumn = nil
        if column < lines[row].count {
            column += 1
        } else if row + 1 < lines.count {
            row += 1
            column = 0
        }
    }

    /// Up one screen row of the text soft-wrapped at `width` columns (the compose scene's width): within a wrapped
    /// line first, as a terminal editor moves. The default width never wraps, so the move is by line.
    public mutating func moveUp(width: Int = .max) { moveVertically(by: -1, width: width) }
    /// Down one screen row of the text soft-wrapped at `width` columns (see `moveUp`).
    public mutating func moveDown(width: Int = .max) { moveVertically(by: 1, width: width) }

    public mutating func moveToLineStart() {
        preferredColumn = nil
        column = 0
    }

    public mutating func moveToLineEnd() {
        preferredColumn = nil
        column = lines[row].count
    }

    /// Moves to another screen row, keeping the screen column (not the grapheme index): from under a Hangul
    /// syllable the cursor lands under the same spot of an ASCII line, and a run of moves through short rows comes
    /// back to the column it started from. Past the first or last row it goes to the start or end of the text's
    /// line.
    private mutating func moveVertically(by delta: Int, width: Int) {
        let width = max(1, width)
        let layout = layout(width: width)
        let target = layout.cursorLine + delta
        guard target >= 0, target < layout.lines.count else {
            preferredColumn = nil
            column = delta < 0 ? 0 : lines[row].count
            return
        }
        let wanted = preferredColumn ?? layout.cursorColumn
        let line = layout.lines[target]
        // A row that the wrap continues on the next one ends before its last grapheme's right edge: a cursor after
        // that grapheme is drawn at the start of the next row, so the farthest it may go here is onto it.
        let continues = target + 1 < layout.lines.count && layout.lines[target + 1].row == line.row
        let graphemes = line.text.count
        var used = 0
        var index = 0
        for character in line.text {
            let charWidth = min(character.columns, width)
            if used + charWidth > wanted { break }
            if continues, index + 1 == graphemes { break }
            used += charWidth
            index += 1
        }
        row = line.row
        column = line.startColumn + index
        preferredColumn = wanted
    }

    // MARK: Layout

    /// One screen line of a soft-wrapped buffer.
    public struct VisualLine: Sendable, Hashable {
        public var row: Int
        public var startColumn: Int
        public var text: String
    }

    /// The buffer broken into screen lines of at most `width` columns (between graphemes), and where the cursor
    /// is among them. A cursor after a full line goes to the start of the next screen line.
    public func layout(width: Int) -> (lines: [VisualLine], cursorLine: Int, cursorColumn: Int) {
        let width = max(1, width)
        var visual: [VisualLine] = []
        var cursorLine = 0
        var cursorColumn = 0
        for (index, line) in lines.enumerated() {
            var start = 0
            var used = 0
            var current = ""
            var position = 0
            func emit() {
                visual.append(VisualLine(row: index, startColumn: start, text: current))
                current = ""
                used = 0
                start = position
            }
            for character in line {
                var charWidth = character.columns
                if charWidth > width { charWidth = width }
                if used + charWidth > width { emit() }
                if index == row, position == column {
                    cursorLine = visual.count
                    cursorColumn = used
                }
                current.append(character)
                used += charWidth
                position += 1
            }
            if index == row, column == line.count {
                if used >= width {
                    emit()
                }
                cursorLine = visual.count
                cursorColumn = used
            }
            emit()
        }
        return (visual, cursorLine, cursorColumn)
    }
}
