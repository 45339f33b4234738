/// Truncating and wrapping text to a number of terminal columns, grapheme by grapheme.
public enum TextLayout {
    /// The ellipsis that marks truncated text; one column wide.
    public static let ellipsis: Character = "…"

    /// What a terminal is shown for a grapheme: control characters become visible symbols ("␛" for ESC and the
    /// rest of the U+2400 block for C0 controls, "�" for DEL and C1 controls), a tab a space. No escape sequence
    /// inside a memo, which anyone with a certificate may have written, ever reaches a terminal.
    public static func displayable(_ character: Character) -> Character {
        guard let first = character.unicodeScalars.first else { return character }
        if character == "\t" { return " " }
        if first.properties.generalCategory == .control {
            if first.value < 0x20 { return Character(Unicode.Scalar(0x2400 + first.value)!) }
            return "\u{FFFD}"
        }
        return character
    }

    /// `text` for a terminal: line breaks and tabs kept, every other control character made visible (see
    /// `displayable`).
    public static func displayable(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            if character == "\n" || character == "\t" {
                result.append(character)
            } else if character == "\r\n" {
                result.append("\n")
            } else {
                result.append(displayable(character))
            }
        }
        return result
    }

    /// `text` cut to at most `columns` columns; when something had to go, the last column holds "…".
    public static func truncate(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        if text.columns <= columns { return text }
        var result = ""
        var used = 0
        let room = columns - ellipsis.columns
        for character in text {
            let width = character.columns
            if used + width > room { break }
            result.append(character)
            used += width
        }
        result.append(ellipsis)
        return result
    }

    /// `text` padded with spaces (or truncated) to exactly `columns` columns.
    public static func pad(_ text: String, to columns: Int) -> String {
        let cut = truncate(text, to: columns)
        let missing = columns - cut.columns
        return missing > 0 ? cut + String(repeating: " ", count: missing) : cut
    }

    /// `text` broken into lines of at most `columns` columns.
    ///
    /// Explicit newlines are kept (an empty line stays an empty line); lines break between words where they can,
    /// the spaces at a break are dropped, and a word longer than a line is broken between graphemes. A grapheme
    /// wider than the whole line (a Hangul syllable at one column) is shown as "…" so that no line overflows.
    public static func wrap(_ text: String, to columns: Int) -> [String] {
        guard columns > 0 else { return [] }
        var lines: [String] = []
        for paragraph in paragraphs(of: text) {
            lines.append(contentsOf: wrapParagraph(paragraph, to: columns))
        }
        return lines
    }

    /// The first non-blank line of a memo without its leading spaces, for one-line listings.
    public static func headline(of content: String) -> String {
        let first = paragraphs(of: content).first { !$0.allSatisfy(\.isWhitespace) }
        return first.map { String($0.drop { $0 == " " }) } ?? "(empty)"
    }

    /// The lines of `text`, split at every "\n" and nowhere else.
    ///
    /// A carriage return is content, not a line break: a lone "\r" would make the terminal go back to the start of
    /// the row and draw over it, and taking it (or the "\r" of "\r\n") for a break would lose it when the editor
    /// joins its lines with "\n" again. It stays at the end of its line, where the grid shows it as "␍". The split
    /// is made on scalars because Swift takes "\r\n" for one grapheme.
    public static func paragraphs(of text: String) -> [Substring] {
        text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map {
            Substring(String(String.UnicodeScalarView($0)))
        }
    }

    private static func wrapParagraph(_ paragraph: Substring, to columns: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var used = 0

        func breakLine() {
            while line.last == " " {
                line.removeLast()
            }
            lines.append(line)
            line = ""
            used = 0
        }

        for token in tokens(of: paragraph) {
            let width = token.text.columns
            if token.isSpace {
                if used + width <= columns {
                    line += token.text
                    used += width
                } else if used > 0 {
                    breakLine()
                }
                continue
            }
            if used + width <= columns {
                line += token.text
                used += width
                continue
            }
            if width <= columns {
                breakLine()
                line = String(token.text)
                used = width
                continue
            }
            // A word longer than a line: fill what is left of this line, then break between graphemes.
            for character in token.text {
                var shown = character
                var charWidth = character.columns
                if charWidth > columns {
                    shown = ellipsis
                    charWidth = ellipsis.columns
                }
                if used + charWidth > columns { breakLine() }
                line.append(shown)
                used += charWidth
            }
        }
        breakLine()
        return lines
    }

    private struct Token {
        var text: Substring
        var isSpace: Bool
    }

    /// Runs of spaces and runs of everything else.
    private static func tokens(of text: Substring) -> [Token] {
        var tokens: [Token] = []
        var index = text.startIndex
        while index < text.endIndex {
            let isSpace = text[index] == " "
            var end = index
            while end < text.endIndex, (text[end] == " ") == isSpace {
                end = text.index(after: end)
            }
            tokens.append(Token(text: text[index..<end], isSpace: isSpace))
            index = end
        }
        return tokens
    }
}
