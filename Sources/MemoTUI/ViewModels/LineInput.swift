/// A one-line text field (the list's filter, the save prompt's path), edited at its end.
public struct LineInput: Sendable, Hashable {
    public private(set) var text: String

    public init(_ text: String = "") {
        self.text = text
    }

    public mutating func insert(_ character: Character) {
        guard !character.isNewline else { return }
        text.append(character)
    }

    /// Pasted text joins the line; line breaks become spaces.
    public mutating func insert(_ pasted: String) {
        for character in pasted { text.append(character.isNewline ? " " : character) }
    }

    public mutating func backspace() {
        if !text.isEmpty { text.removeLast() }
    }
}
