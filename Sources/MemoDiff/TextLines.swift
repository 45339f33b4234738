/// A text cut into lines, each line with its `\n` (the last line may lack it), compared as UTF-8 bytes.
///
/// A line is its bytes including the terminator, so `b` at the end of a file without a newline and `b\n` are
/// different lines, as `diff` and `git` count them. Swift's `String ==` is canonical equivalence (`가` in NFC
/// equals its NFD spelling); lines here are byte strings, so those two are different lines.
public struct TextLines: Sendable {
    /// The text's UTF-8 bytes.
    public let bytes: [UInt8]
    /// Where each line's bytes are in `bytes`, terminator included.
    public let ranges: [Range<Int>]

    /// Cuts `text` after every `\n`; an empty text has no lines.
    public init(_ text: String) {
        self.init(bytes: Array(text.utf8))
    }

    /// Cuts UTF-8 bytes after every `\n`.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
        var ranges: [Range<Int>] = []
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            ranges.append(start..<(index + 1))
            start = index + 1
        }
        if start < bytes.count { ranges.append(start..<bytes.count) }
        self.ranges = ranges
    }

    /// The number of lines.
    public var count: Int { ranges.count }

    /// Line `index`'s bytes, terminator included.
    public subscript(index: Int) -> ArraySlice<UInt8> { bytes[ranges[index]] }

    /// Whether line `index` ends with `\n` (only a text's last line may not).
    public func hasNewline(_ index: Int) -> Bool {
        let range = ranges[index]
        return !range.isEmpty && bytes[range.upperBound - 1] == UInt8(ascii: "\n")
    }

    /// The bytes of lines `range`, joined as they are.
    public func bytes(of range: Range<Int>) -> ArraySlice<UInt8> {
        if range.isEmpty { return [] }
        return bytes[ranges[range.lowerBound].lowerBound..<ranges[range.upperBound - 1].upperBound]
    }
}

/// Numbers lines so that equal bytes get equal numbers: the diff then compares integers, not byte strings.
struct LineNumbering {
    private var numbers: [ArraySlice<UInt8>: Int32] = [:]

    /// Each line's number, in order.
    mutating func number(_ lines: TextLines) -> [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(lines.count)
        for index in 0..<lines.count {
            let line = lines[index]
            if let known = numbers[line] {
                result.append(known)
            } else {
                let next = Int32(numbers.count)
                numbers[line] = next
                result.append(next)
            }
        }
        return result
    }
}
