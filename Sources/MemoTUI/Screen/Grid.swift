import MemoText

/// A screen's worth of cells that scenes draw into; the renderer turns the difference between two grids into
/// escape sequences. Nothing is ever written past the width.
public struct Grid: Sendable, Hashable {
    public let width: Int
    public let height: Int
    private var cells: [Cell]
    /// Where the focused editor wants the cursor; nil hides it.
    public var cursor: CursorPosition?

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public subscript(row: Int, column: Int) -> Cell {
        get { cells[row * width + column] }
    }

    /// Writes `text` from (`row`, `column`), clipped to `maxWidth` columns and to the grid's edge.
    ///
    /// Control characters are drawn as a visible symbol (so that no escape sequence inside a memo ever reaches
    /// the terminal) and a tab as a space. A wide grapheme that does not fit in the last column becomes a space.
    /// - Returns: the columns written.
    @discardableResult
    public mutating func put(
        _ text: some StringProtocol, row: Int, column: Int, style: CellStyle = .plain, maxWidth: Int? = nil
    ) -> Int {
        guard row >= 0, row < height, column >= 0, column < width else { return 0 }
        let limit = min(width, column + max(0, maxWidth ?? width))
        var col = column
        for character in text {
            guard col < limit else { break }
            let shown = TextLayout.displayable(character)
            let charWidth = shown.columns
            if charWidth == 0 { continue }
            if col + charWidth > limit {
                set(Cell(" ", style: style), row: row, column: col)
                col += 1
                break
            }
            set(Cell(shown, style: style), row: row, column: col)
            if charWidth == 2 { set(.continuation(style: style), row: row, column: col + 1) }
            col += charWidth
        }
        return col - column
    }

    /// Fills `count` columns from (`row`, `column`) with spaces in `style`.
    public mutating func fill(row: Int, column: Int = 0, count: Int? = nil, style: CellStyle = .plain) {
        guard row >= 0, row < height, column >= 0, column < width else { return }
        let end = min(width, column + (count ?? width))
        for col in column..<end { set(Cell(" ", style: style), row: row, column: col) }
    }

    /// Sets one cell, repairing any wide grapheme it cuts in half.
    private mutating func set(_ cell: Cell, row: Int, column: Int) {
        let index = row * width + column
        let old = cells[index]
        if old.isContinuation, column > 0, !cell.isContinuation {
            // Overwriting the right half of a wide grapheme: its left half can no longer be shown.
            cells[index - 1] = Cell(" ", style: cells[index - 1].style)
        }
        if !old.isContinuation, old.grapheme.columns == 2, column + 1 < width,
            cells[index + 1].isContinuation, !(cell.grapheme.columns == 2)
        {
            // Overwriting the left half: the placeholder that followed it becomes a space.
            cells[index + 1] = Cell(" ", style: cells[index + 1].style)
        }
        cells[index] = cell
    }


    /// The text of one row, wide graphemes once each, trailing spaces kept.
    public func text(ofRow row: Int) -> String {
        var line = ""
        for col in 0..<width where !self[row, col].isContinuation {
            line.append(self[row, col].grapheme)
        }
        return line
    }

    /// The grid as text: one line per row between "|" borders (which line up on a terminal because wide graphemes
    /// take two columns there too), then the cursor. Snapshot tests compare this.
    public var textDump: String {
        var lines: [String] = []
        for row in 0..<height { lines.append("|" + text(ofRow: row) + "|") }
        if let cursor {
            lines.append("cursor: \(cursor.row),\(cursor.column)")
        } else {
            lines.append("cursor: hidden")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
