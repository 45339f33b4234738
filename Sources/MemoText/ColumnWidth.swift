/// How many terminal columns text takes, from a table of East Asian Wide and Fullwidth ranges.
///
/// libc `wcwidth` depends on the locale (and answers -1 for Hangul in the C locale), so the width comes from this
/// table instead: Unicode 14's `W` and `F` ranges (Hangul syllables and jamo, CJK, fullwidth forms and the emoji
/// with emoji presentation), merged across unassigned gaps. Ambiguous characters count as narrow.
public enum ColumnWidth {
    /// Inclusive ranges of scalars two columns wide, sorted and disjoint.
    static let wideRanges: [(UInt32, UInt32)] = [
        (0x1100, 0x115F), (0x231A, 0x231B), (0x2329, 0x232A), (0x23E9, 0x23EC), (0x23F0, 0x23F0), (0x23F3, 0x23F3),
        (0x25FD, 0x25FE), (0x2614, 0x2615), (0x2648, 0x2653), (0x267F, 0x267F), (0x2693, 0x2693), (0x26A1, 0x26A1),
        (0x26AA, 0x26AB), (0x26BD, 0x26BE), (0x26C4, 0x26C5), (0x26CE, 0x26CE), (0x26D4, 0x26D4), (0x26EA, 0x26EA),
        (0x26F2, 0x26F3), (0x26F5, 0x26F5), (0x26FA, 0x26FA), (0x26FD, 0x26FD), (0x2705, 0x2705), (0x270A, 0x270B),
        (0x2728, 0x2728), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757), (0x2795, 0x2797),
        (0x27B0, 0x27B0), (0x27BF, 0x27BF), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x2E80, 0x303E),
        (0x3041, 0x3247), (0x3250, 0x4DBF), (0x4E00, 0xA4C6), (0xA960, 0xA97C), (0xAC00, 0xD7A3), (0xF900, 0xFAFF),
        (0xFE10, 0xFE19), (0xFE30, 0xFE6B), (0xFF01, 0xFF60), (0xFFE0, 0xFFE6), (0x16FE0, 0x18D08),
        (0x1AFF0, 0x1B2FB), (0x1F004, 0x1F004), (0x1F0CF, 0x1F0CF), (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A),
        (0x1F200, 0x1F265), (0x1F300, 0x1F320), (0x1F32D, 0x1F335), (0x1F337, 0x1F37C), (0x1F37E, 0x1F393),
        (0x1F3A0, 0x1F3CA), (0x1F3CF, 0x1F3D3), (0x1F3E0, 0x1F3F0), (0x1F3F4, 0x1F3F4), (0x1F3F8, 0x1F43E),
        (0x1F440, 0x1F440), (0x1F442, 0x1F4FC), (0x1F4FF, 0x1F53D), (0x1F54B, 0x1F54E), (0x1F550, 0x1F567),
        (0x1F57A, 0x1F57A), (0x1F595, 0x1F596), (0x1F5A4, 0x1F5A4), (0x1F5FB, 0x1F64F), (0x1F680, 0x1F6C5),
        (0x1F6CC, 0x1F6CC), (0x1F6D0, 0x1F6D2), (0x1F6D5, 0x1F6DF), (0x1F6EB, 0x1F6EC), (0x1F6F4, 0x1F6FC),
        (0x1F7E0, 0x1F7F0), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1F9FF), (0x1FA70, 0x1FAF6),
        (0x20000, 0x3FFFD),
    ]

    /// True when the scalar is East Asian Wide or Fullwidth.
    public static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x1100 { return false }
        var low = 0
        var high = wideRanges.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let (first, last) = wideRanges[mid]
            if value < first {
                high = mid - 1
            } else if value > last {
                low = mid + 1
            } else {
                return true
            }
        }
        return false
    }

    /// True when the scalar takes no column of its own: combining marks, joiners, variation selectors, format
    /// characters and Hangul medial/final jamo (which join the syllable before them).
    public static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2064, 0xFE00...0xFE0F, 0xFEFF, 0xE0100...0xE01EF:
            return true
        case 0x1160...0x11FF, 0xD7B0...0xD7FF:
            return true
        default:
            break
        }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format:
            return true
        default:
            return false
        }
    }

    /// The columns of one scalar on its own: 0, 1 or 2.
    public static func width(of scalar: Unicode.Scalar) -> Int {
        if isZeroWidth(scalar) { return 0 }
        return isWide(scalar) ? 2 : 1
    }

    /// The columns of a grapheme: the widest of its scalars, so that an emoji ZWJ sequence or a syllable built from
    /// jamo counts as 2. A flag (two regional indicators) and an emoji made wide by VS16 (U+FE0F) count 2 as well.
    /// Control characters count 1: the grid draws them as a visible symbol.
    public static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        var widest = 0
        var regionalIndicators = 0
        var emojiVariation = false
        for scalar in scalars {
            widest = max(widest, width(of: scalar))
            if (0x1F1E6...0x1F1FF).contains(scalar.value) { regionalIndicators += 1 }
            if scalar.value == 0xFE0F { emojiVariation = true }
        }
        if regionalIndicators >= 2 { return 2 }
        if emojiVariation, let first = scalars.first, first.properties.isEmoji, first.value > 0xFF { return 2 }
        return widest
    }

    /// True for a grapheme whose width terminals disagree on: a flag (two regional indicators), an emoji ZWJ
    /// sequence (👩‍💻, which some draw as its two emoji side by side), one with a skin-tone modifier, a keycap or
    /// a tag sequence, or an emoji made wide by VS16. The table says 2 for all of them, but the terminal may take 1
    /// or 4 columns, so the renderer places the cursor again after one and redraws its row whole when it changes.
    public static func isUncertain(_ character: Character) -> Bool {
        let scalars = character.unicodeScalars
        guard scalars.count > 1 else { return false }
        for scalar in scalars {
            switch scalar.value {
            case 0x200D, 0xFE0F, 0x20E3, 0x1F1E6...0x1F1FF, 0x1F3FB...0x1F3FF, 0xE0020...0xE007F:
                return true
            default:
                continue
            }
        }
        return false
    }

    /// The columns of a string: the sum of its graphemes' widths.
    public static func width<S: StringProtocol>(of text: S) -> Int {
        var total = 0
        for character in text { total += width(of: character) }
        return total
    }

    /// The columns taken by the first `count` graphemes of `characters`.
    public static func width<C: Collection>(of characters: C, prefix count: Int) -> Int where C.Element == Character {
        var total = 0
        for character in characters.prefix(count) { total += width(of: character) }
        return total
    }
}

extension Character {
    /// Terminal columns this grapheme takes (see `ColumnWidth`).
    public var columns: Int { ColumnWidth.width(of: self) }
}

extension StringProtocol {
    /// Terminal columns this text takes (see `ColumnWidth`).
    public var columns: Int { ColumnWidth.width(of: self) }
}
