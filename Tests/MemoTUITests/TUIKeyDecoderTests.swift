import MemoTUI
import MemoViewModels
import Testing

@Suite("TUI key decoder: bytes to keys, one at a time and all at once")
struct TUIKeyDecoderTests {
    /// Decodes `bytes` fed all at once and one byte at a time, checks both agree, and returns the keys.
    private func decode(_ bytes: [UInt8], flush: Bool = true) -> [Key] {
        var whole = KeyDecoder()
        var wholeKeys = whole.feed(bytes)
        if flush { wholeKeys += whole.flush() }
        var single = KeyDecoder()
        var singleKeys: [Key] = []
        for byte in bytes { singleKeys += single.feed([byte]) }
        if flush { singleKeys += single.flush() }
        #expect(wholeKeys == singleKeys)
        return wholeKeys
    }

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func printableASCIIAndKoreanGraphemes() {
        #expect(decode(bytes("ab")) == [.character("a"), .character("b")])
        #expect(decode(bytes("한글")) == [.character("한"), .character("글")])
        #expect(decode(bytes("😀")) == [.character("😀")])
    }

    @Test func enterTabBackspaceAndControlLetters() {
        #expect(decode([0x0D, 0x09, 0x7F, 0x08]) == [.enter, .tab, .backspace, .backspace])
        #expect(decode([0x03, 0x13, 0x05]) == [.control("c"), .control("s"), .control("e")])
    }

    @Test func arrowsHomeEndPagesAndDelete() {
        #expect(decode(bytes("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D")) == [.up, .down, .right, .left])
        #expect(decode(bytes("\u{1B}OA\u{1B}OH\u{1B}OF")) == [.up, .home, .end])
        #expect(decode(bytes("\u{1B}[H\u{1B}[F\u{1B}[1~\u{1B}[4~")) == [.home, .end, .home, .end])
        #expect(decode(bytes("\u{1B}[5~\u{1B}[6~\u{1B}[3~")) == [.pageUp, .pageDown, .delete])
        #expect(decode(bytes("\u{1B}[1;5C")) == [.right])
    }

    @Test func aLoneEscapeNeedsTheFlush() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x1B]).isEmpty)
        #expect(decoder.hasPending)
        #expect(decoder.flush() == [.escape])
        #expect(!decoder.hasPending)
        #expect(decode([0x1B, 0x1B]) == [.escape, .escape])
        #expect(decode(bytes("\u{1B}q")) == [.alt("q")])
    }

    @Test func aCutSequenceWaitsForMoreBytes() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x1B, 0x5B]).isEmpty)
        #expect(decoder.feed([0x41]) == [.up])
        #expect(decoder.feed([0xED, 0x95]).isEmpty)
        #expect(decoder.feed([0x9C]) == [.character("한")])
    }

    @Test func bracketedPasteIsOneEventWithNewlines() {
        let pasted = decode(bytes("x\u{1B}[200~첫 줄\r\n둘째 줄\r셋\u{1B}[201~y"))
        #expect(pasted == [.character("x"), .paste("첫 줄\n둘째 줄\n셋"), .character("y")])
        // Escape bytes inside a paste are text, and the flush does not end a paste.
        var decoder = KeyDecoder()
        #expect(decoder.feed(bytes("\u{1B}[200~a\u{1B}")).isEmpty)
        #expect(decoder.flush().isEmpty)
        #expect(decoder.isInPaste)
        #expect(decoder.feed(bytes("[201~")) == [.paste("a")])
    }

    @Test func invalidUTF8BecomesAReplacementCharacter() {
        #expect(decode([0xFF, 0x61]) == [.character("\u{FFFD}"), .character("a")])
        #expect(decode([0xED, 0x61]) == [.character("\u{FFFD}"), .character("a")])
    }
}
