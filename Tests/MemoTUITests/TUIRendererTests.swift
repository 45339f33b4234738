import MemoTUI
import Testing

@Suite("TUI grid and renderer: clipping, wide cells, diffs")
struct TUIRendererTests {
    @Test func putNeverWritesPastTheWidthAndAWideCharAtTheLastColumnBecomesASpace() {
        var grid = Grid(width: 5, height: 1)
        let written = grid.put("ab한글", row: 0, column: 0)
        #expect(written == 5)
        #expect(grid.text(ofRow: 0) == "ab한 ")
        #expect(grid[0, 2].grapheme == "한")
        #expect(grid[0, 3].isContinuation)
        #expect(grid[0, 4].grapheme == " ")
        var limited = Grid(width: 10, height: 1)
        #expect(limited.put("가나다", row: 0, column: 2, maxWidth: 3) == 3)
        #expect(limited.text(ofRow: 0) == "  가" + String(repeating: " ", count: 6))
    }

    @Test func overwritingHalfAWideCharBlanksTheOtherHalf() {
        var grid = Grid(width: 4, height: 1)
        grid.put("한글", row: 0, column: 0)
        grid.put("x", row: 0, column: 1)
        #expect(grid.text(ofRow: 0) == " x글")
        grid.put("y", row: 0, column: 2)
        #expect(grid.text(ofRow: 0) == " xy ")
    }

    @Test func controlCharactersNeverReachTheTerminal() {
        var grid = Grid(width: 10, height: 1)
        grid.put("a\u{1B}[2Jb\tc", row: 0, column: 0)
        #expect(grid.text(ofRow: 0) == "a␛[2Jb c  ")
    }

    @Test func theFirstFrameDrawsEverythingThenOnlyChangesAreSent() {
        var renderer = Renderer()
        var grid = Grid(width: 4, height: 2)
        grid.put("ab", row: 0, column: 0)
        let first = renderer.render(grid)
        #expect(first.hasPrefix("\u{1B}[?25l\u{1B}[0m\u{1B}[2J"))
        #expect(first.contains("ab"))
        #expect(renderer.render(grid) == "")
        grid.put("X", row: 1, column: 2)
        #expect(renderer.render(grid) == "\u{1B}[2;3H\u{1B}[0mX")
    }

    @Test func aChangedWideCharIsSentOnceWithItsStyle() {
        var renderer = Renderer()
        var grid = Grid(width: 6, height: 1)
        _ = renderer.render(grid)
        grid.put("한", row: 0, column: 3, style: .bold)
        #expect(renderer.render(grid) == "\u{1B}[1;4H\u{1B}[0;1m한\u{1B}[0m")
        grid.put("ab", row: 0, column: 3)
        #expect(renderer.render(grid) == "\u{1B}[1;4H\u{1B}[0mab")
    }

    @Test func aResizeRedrawsInFullAndTheCursorGoesWhereTheEditorWantsIt() {
        var renderer = Renderer()
        var small = Grid(width: 3, height: 1)
        small.put("abc", row: 0, column: 0)
        _ = renderer.render(small)
        var large = Grid(width: 4, height: 2)
        large.put("abc", row: 0, column: 0)
        large.cursor = CursorPosition(row: 1, column: 2)
        let output = renderer.render(large)
        #expect(output.contains("\u{1B}[2J"))
        #expect(output.hasSuffix("\u{1B}[2;3H\u{1B}[?25h"))
        large.cursor = nil
        #expect(renderer.render(large) == "\u{1B}[?25l")
    }

    @Test func withoutColourOnlyBoldAndReverseAreSent() {
        var grid = Grid(width: 3, height: 1)
        grid.put("a", row: 0, column: 0, style: CellStyle(bold: true, dim: true, foreground: .red))
        var coloured = Renderer(colorEnabled: true)
        #expect(coloured.render(grid).contains("\u{1B}[0;1;2;31ma"))
        var plain = Renderer(colorEnabled: false)
        let output = plain.render(grid)
        #expect(output.contains("\u{1B}[0;1ma"))
        #expect(!output.contains("31"))
    }
}
