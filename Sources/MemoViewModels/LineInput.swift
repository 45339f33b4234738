/// A one-line text field (the list's filter, the save prompt's path), edited at its end.
///
/// A field may start with its text selected (a suggested file name): the first character typed replaces it, and
/// Backspace clears it, as in a GUI's save dialog.
public struct LineInput: Sendable, Hashable {
    public private(set) var text: String
    /// True while the whole text is selected.
    public private(set) var isSelected: Bool

    public init(_ text: String = "", selected: Bool = false) {
        self.text = text
        isSelected = selected && !text.isEmpty
    }

    public mutating func insert(_ character: Character) {
        guard !character.isNewline else { return }
        replaceSelection()
        text.append(character)
    }

    /// Pasted text joins the line; line breaks become spaces.
    public mutating func insert(_ pasted: String) {
        replaceSelection()
        for character in pasted { text.append(character.isNewline ? " " : character) }
    }

    public mutating func backspace() {
        if isSelected {
            replaceSelection()
        } else if !text.isEmpty {
            text.removeLast()
        }
    }

    /// Ctrl-U: clears the line (the cursor is always at its end).
    public mutating func deleteToStart() {
        text = ""
        isSelected = false
    }

    /// Ctrl-W: deletes the word before the cursor and the blanks after it, as a shell does.
    public mutating func deleteWord() {
        if isSelected {
            replaceSelection()
            return
        }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        while let last = text.last, !last.isWhitespace { text.removeLast() }
    }

    /// Keeps the text but drops the selection (the cursor moved).
    public mutating func deselect() { isSelected = false }

    private mutating func replaceSelection() {
        guard isSelected else { return }
        text = ""
        isSelected = false
    }

    /// The editing keys every one-line field takes. - Returns: false for a key that is not an edit.
    public mutating func apply(_ key: Key) -> Bool {
        switch key {
        case .character(let character): insert(character)
        case .paste(let pasted): insert(pasted)
        case .backspace: backspace()
        case .control("u"): deleteToStart()
        case .control("w"): deleteWord()
        case .right, .end: deselect()
        default: return false
        }
        return true
    }
}
