/// One thing the user did on the keyboard, decoded from the terminal's bytes.
public enum Key: Sendable, Hashable {
    /// A printable grapheme (Hangul syllables arrive as one, from three UTF-8 bytes).
    case character(Character)
    case enter
    case escape
    case tab
    case backTab
    case backspace
    case delete
    case up
    case down
    case left
    case right
    case home
    case end
    case pageUp
    case pageDown
    /// Ctrl with a letter, lowercased: Ctrl-S is `.control("s")`. Ctrl-C arrives as `.control("c")` in raw mode.
    case control(Character)
    /// Alt (Meta) with a key, sent as ESC before it.
    case alt(Character)
    /// Text pasted with bracketed paste, line breaks normalised to "\n".
    case paste(String)
    /// An escape sequence this decoder does not know, kept for debugging.
    case unknown([UInt8])
}
