import MemoText

/// A terminal colour (the eight basic SGR colours, so that every terminal shows them).
public enum TerminalColor: UInt8, Sendable, Hashable {
    case black = 0, red, green, yellow, blue, magenta, cyan, white
}

/// How a cell is drawn.
public struct CellStyle: Sendable, Hashable {
    public var bold: Bool
    public var reverse: Bool
    public var dim: Bool
    public var foreground: TerminalColor?

    public init(bold: Bool = false, reverse: Bool = false, dim: Bool = false, foreground: TerminalColor? = nil) {
        self.bold = bold
        self.reverse = reverse
        self.dim = dim
        self.foreground = foreground
    }

    public static let plain = CellStyle()
    public static let bold = CellStyle(bold: true)
    public static let reverse = CellStyle(reverse: true)
    public static let dim = CellStyle(dim: true)

    /// The style as it will be shown: without colour only bold and reverse survive (`NO_COLOR`).
    public func shown(colorEnabled: Bool) -> CellStyle {
        colorEnabled ? self : CellStyle(bold: bold, reverse: reverse)
    }

    /// The SGR sequence that selects this style from any other: a reset, then the attributes.
    public var sgr: String {
        var codes = ["0"]
        if bold { codes.append("1") }
        if dim { codes.append("2") }
        if reverse { codes.append("7") }
        if let foreground { codes.append(String(30 + Int(foreground.rawValue))) }
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }
}

/// One cell of the screen: a grapheme and its style. A wide grapheme fills its cell and the next one, which holds a
/// placeholder (`isContinuation`) so that the grid and the terminal agree on every column.
public struct Cell: Sendable, Hashable {
    public var grapheme: Character
    public var style: CellStyle
    /// True for the second half of a wide grapheme; such a cell draws nothing of its own.
    public var isContinuation: Bool

    public init(_ grapheme: Character = " ", style: CellStyle = .plain, isContinuation: Bool = false) {
        self.grapheme = grapheme
        self.style = style
        self.isContinuation = isContinuation
    }

    public static let blank = Cell()

    /// The placeholder that follows a wide grapheme.
    public static func continuation(style: CellStyle) -> Cell {
        Cell("\u{0}", style: style, isContinuation: true)
    }

    /// Columns this cell's grapheme takes: 0 for a placeholder.
    public var width: Int { isContinuation ? 0 : grapheme.columns }
}

/// Where the terminal cursor is shown, if anywhere.
public struct CursorPosition: Sendable, Hashable {
    public var row: Int
    public var column: Int

    public init(row: Int, column: Int) {
        self.row = row
        self.column = column
    }
}
