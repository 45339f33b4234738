import MemoViewModels

/// Turns the bytes a terminal in raw mode sends into `Key`s.
///
/// Bytes may arrive in any chunks: an incomplete UTF-8 sequence or escape sequence waits for the next `feed`. A lone
/// ESC cannot be told from the start of a sequence until no more bytes come: the reader calls `flush()` when a short
/// timeout passes with nothing new (tests call it directly), which turns what is pending into keys.
public struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []
    /// Bytes of a bracketed paste in progress (after ESC [ 200 ~).
    private var paste: [UInt8]?

    private static let pasteEnd: [UInt8] = Array("\u{1B}[201~".utf8)

    public init() {}

    /// True when bytes wait for more input (the reader then arms the ESC timeout).
    public var hasPending: Bool { !pending.isEmpty }

    /// True inside a bracketed paste: the ESC timeout does not apply, the paste waits for its end marker.
    public var isInPaste: Bool { paste != nil }

    /// Decodes as many keys as the bytes so far allow.
    public mutating func feed<S: Sequence>(_ bytes: S) -> [Key] where S.Element == UInt8 {
        pending.append(contentsOf: bytes)
        return decode(final: false)
    }

    /// Says that no more bytes are coming for now: a pending ESC is a lone Escape, a cut sequence is given up.
    public mutating func flush() -> [Key] {
        guard paste == nil else { return [] }
        return decode(final: true)
    }

    private mutating func decode(final: Bool) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            if paste != nil {
                if let end = find(Self.pasteEnd, in: pending, from: index) {
                    paste!.append(contentsOf: pending[index..<end])
                    keys.append(.paste(Self.pastedText(paste!)))
                    paste = nil
                    index = end + Self.pasteEnd.count
                    continue
                }
                // Keep a possible partial end marker for the next feed.
                let keep = partialSuffix(of: pending[index...], matching: Self.pasteEnd)
                paste!.append(contentsOf: pending[index..<(pending.count - keep)])
                index = pending.count - keep
                break
            }
            let (key, used) = decodeOne(at: index, final: final)
            if used == 0 { break }
            if let key { keys.append(key) }
            index += used
        }
        pending.removeFirst(index)
        return keys
    }

    /// One key from `pending[index...]`; `used == 0` means "need more bytes".
    private mutating func decodeOne(at index: Int, final: Bool) -> (Key?, used: Int) {
        let byte = pending[index]
        switch byte {
        case 0x1B:
            return decodeEscape(at: index, final: final)
        case 0x0D, 0x0A:
            // Enter sends CR in raw mode; Ctrl-J (LF) is treated the same.
            return (.enter, 1)
        case 0x09:
            return (.tab, 1)
        case 0x7F, 0x08:
            return (.backspace, 1)
        case 0x00:
            return (.control("@"), 1)
        case 0x01...0x1A:
            return (.control(Character(Unicode.Scalar(byte + 0x60))), 1)
        case 0x1C...0x1F:
            return (.unknown([byte]), 1)
        default:
            return decodeUTF8(at: index, final: final)
        }
    }

    private func decodeUTF8(at index: Int, final: Bool) -> (Key?, used: Int) {
        let lead = pending[index]
        let length: Int
        switch lead {
        case 0x20...0x7E: return (.character(Character(Unicode.Scalar(lead))), 1)
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return (.character("\u{FFFD}"), 1)
        }
        var available = 1
        while available < length, index + available < pending.count,
            pending[index + available] & 0xC0 == 0x80
        {
            available += 1
        }
        if available < length {
            // Cut short by a byte that cannot continue it, or waiting for more.
            if index + available < pending.count || final { return (.character("\u{FFFD}"), available) }
            return (nil, 0)
        }
        let bytes = pending[index..<(index + length)]
        let text = String(decoding: bytes, as: UTF8.self)
        guard let character = text.first else { return (nil, length) }
        if character.unicodeScalars.first?.properties.generalCategory == .control { return (nil, length) }
        return (.character(character), length)
    }

    private mutating func decodeEscape(at index: Int, final: Bool) -> (Key?, used: Int) {
        guard index + 1 < pending.count else { return final ? (.escape, 1) : (nil, 0) }
        let next = pending[index + 1]
        switch next {
        case UInt8(ascii: "["):
            return decodeCSI(at: index, final: final)
        case UInt8(ascii: "O"):
            guard index + 2 < pending.count else { return final ? (.alt("O"), 2) : (nil, 0) }
            return (Self.cursorKey(pending[index + 2]) ?? .unknown(Array(pending[index...(index + 2)])), 3)
        case 0x1B:
            // ESC ESC: the first is a lone Escape.
            return (.escape, 1)
        case 0x20...0x7E:
            return (.alt(Character(Unicode.Scalar(next))), 2)
        default:
            return (.escape, 1)
        }
    }

    /// ESC [ parameters (0x30-0x3F) intermediates (0x20-0x2F) final (0x40-0x7E).
    private mutating func decodeCSI(at index: Int, final: Bool) -> (Key?, used: Int) {
        var end = index + 2
        while end < pending.count, (0x20...0x3F).contains(pending[end]) {
            end += 1
        }
        guard end < pending.count else {
            // Cut short: when no more input is coming, ESC was a lone Escape and "[" a typed bracket.
            return final ? (.escape, 1) : (nil, 0)
        }
        let finalByte = pending[end]
        let used = end - index + 1
        guard (0x40...0x7E).contains(finalByte) else { return (.unknown(Array(pending[index..<(end + 1)])), used) }
        let parameters = String(decoding: pending[(index + 2)..<end], as: UTF8.self)
            .split(separator: ";").map { Int($0) ?? 0 }
        if let cursor = Self.cursorKey(finalByte) { return (cursor, used) }
        let key: Key?
        switch finalByte {
        case UInt8(ascii: "Z"): key = .backTab
        case UInt8(ascii: "~"):
            switch parameters.first ?? 0 {
            case 1, 7: key = .home
            case 4, 8: key = .end
            case 3: key = .delete
            case 5: key = .pageUp
            case 6: key = .pageDown
            case 200:
                paste = []
                key = nil
            case 201: key = nil
            default: key = .unknown(Array(pending[index..<(end + 1)]))
            }
        default:
            key = .unknown(Array(pending[index..<(end + 1)]))
        }
        return (key, used)
    }

    /// The arrows, Home and End: the same final byte after ESC [ (CSI) and ESC O (SS3, application cursor mode).
    private static func cursorKey(_ byte: UInt8) -> Key? {
        switch byte {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        default: return nil
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count - start >= needle.count else { return nil }
        for offset in start...(haystack.count - needle.count)
        where haystack[offset..<(offset + needle.count)].elementsEqual(needle) {
            return offset
        }
        return nil
    }

    /// How many bytes at the end of `bytes` are a proper prefix of `marker`.
    private func partialSuffix(of bytes: ArraySlice<UInt8>, matching marker: [UInt8]) -> Int {
        for length in stride(from: min(marker.count - 1, bytes.count), to: 0, by: -1)
        where bytes.suffix(length).elementsEqual(marker.prefix(length)) {
            return length
        }
        return 0
    }

    /// Pasted bytes as text, with CR LF and lone CR (what terminals send for a line break) turned into "\n".
    static func pastedText(_ bytes: [UInt8]) -> String {
        var normalised: [UInt8] = []
        normalised.reserveCapacity(bytes.count)
        for (offset, byte) in bytes.enumerated() {
            if byte == 0x0D {
                if offset + 1 < bytes.count, bytes[offset + 1] == 0x0A { continue }
                normalised.append(0x0A)
            } else {
                normalised.append(byte)
            }
        }
        return String(decoding: normalised, as: UTF8.self)
    }
}
