import MemoText

/// Turns grids into terminal output, writing only the cells that changed since the last frame.
///
/// The first frame, and every frame after a resize or `invalidate()`, clears the screen and draws every cell.
public struct Renderer: Sendable {
    /// False under `NO_COLOR`: only bold and reverse are kept.
    public var colorEnabled: Bool
    private var previous: Grid?
    private var cursorShown = false

    public init(colorEnabled: Bool = true) {
        self.colorEnabled = colorEnabled
    }

    /// Forgets what is on the terminal, so that the next frame is drawn in full (after $EDITOR ran, for instance).
    public mutating func invalidate() {
        previous = nil
    }

    /// The output that turns the last frame into `grid`; empty when nothing changed.
    public mutating func render(_ grid: Grid) -> String {
        var output = ""
        var penRow = -1
        var penColumn = -1
        var penStyle: CellStyle?

        let full = previous.map { $0.width != grid.width || $0.height != grid.height } ?? true
        if full {
            output += "\u{1B}[?25l\u{1B}[0m\u{1B}[2J"
            cursorShown = false
            penStyle = .plain
        }

        for row in 0..<grid.height {
            // A row that holds (or held) a grapheme of uncertain width may not be where the grid thinks on the
            // terminal: a flag drawn one column wide, a ZWJ sequence drawn four. When it changes it is cleared and
            // drawn whole, so that no fragment of the old drawing stays beside the new one.
            var wholeRow = false
            if !full, let previous, rowChanged(previous, grid, row: row),
                hasUncertainWidth(previous, row: row) || hasUncertainWidth(grid, row: row)
            {
                wholeRow = true
                if cursorShown {
                    output += "\u{1B}[?25l"
                    cursorShown = false
                }
                output += "\u{1B}[\(row + 1);1H"
                if penStyle != .plain {
                    // Erase with the default background, not the last cell's.
                    output += CellStyle.plain.sgr
                    penStyle = .plain
                }
                output += "\u{1B}[2K"
                penRow = row
                penColumn = 0
            }
            var column = 0
            while column < grid.width {
                let cell = grid[row, column]
                if cell.isContinuation {
                    column += 1
                    continue
                }
                let span = max(1, min(cell.width, grid.width - column))
                if !full, !wholeRow, let previous, !changed(previous, grid, row: row, column: column, span: span) {
                    column += span
                    continue
                }
                if cursorShown {
                    // Hide the cursor while painting so that it does not flicker across the screen.
                    output += "\u{1B}[?25l"
                    cursorShown = false
                }
                if penRow != row || penColumn != column {
                    output += "\u{1B}[\(row + 1);\(column + 1)H"
                }
                let style = cell.style.shown(colorEnabled: colorEnabled)
                if penStyle != style {
                    output += style.sgr
                    penStyle = style
                }
                output.append(cell.grapheme)
                penRow = row
                // After a grapheme of uncertain width the terminal's cursor may be anywhere: place it again.
                penColumn = ColumnWidth.isUncertain(cell.grapheme) ? -1 : column + span
                column += span
            }
        }

        if let style = penStyle, style != .plain {
            output += CellStyle.plain.sgr
        }
        if let cursor = grid.cursor, cursor.row < grid.height, cursor.column < grid.width {
            if cursor != previous?.cursor || !cursorShown {
                output += "\u{1B}[\(cursor.row + 1);\(cursor.column + 1)H\u{1B}[?25h"
                cursorShown = true
            }
        } else if cursorShown {
            output += "\u{1B}[?25l"
            cursorShown = false
        }
        previous = grid
        return output
    }

    /// True when any cell of `row` differs between the two grids.
    private func rowChanged(_ old: Grid, _ new: Grid, row: Int) -> Bool {
        for col in 0..<new.width where old[row, col] != new[row, col] {
            return true
        }
        return false
    }

    /// True when `row` holds a grapheme whose width terminals disagree on (`ColumnWidth.isUncertain`).
    private func hasUncertainWidth(_ grid: Grid, row: Int) -> Bool {
        for col in 0..<grid.width where ColumnWidth.isUncertain(grid[row, col].grapheme) {
            return true
        }
        return false
    }

    /// True when the cell at (`row`, `column`), or the placeholder after it, differs between the two grids.
    private func changed(_ old: Grid, _ new: Grid, row: Int, column: Int, span: Int) -> Bool {
        for col in column..<(column + span) where old[row, col] != new[row, col] {
            return true
        }
        return false
    }
}
