#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MemoModel
/// The list's filter: a case-insensitive substring match decided on UTF-8 bytes (content and filter both
/// lowercased, then compared byte for byte, so an NFD memo does not match an NFC filter).
///
/// Each row keeps its memo's lowercased bytes, made when the memo enters the list (a reset, or one edit), so no
/// keystroke folds anything: the first one after an empty filter used to fold every memo (116-258 ms at 100,000).
/// Most contents are already lowercase; their row keeps nothing and is searched in the string's own UTF-8.
enum ListFilter {
    /// The filter's text as the bytes a memo must contain.
    static func needle(_ filter: String) -> [UInt8] { fold(filter) }

    /// `text` lowercased, as UTF-8: each scalar's lowercase mapping, which is what `lowercased()` does, without
    /// building strings for the scalars that have no case (ASCII letters aside, most: Hangul, digits, CJK).
    static func fold(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                let byte = UInt8(scalar.value)
                bytes.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
            } else if hasNoCase(scalar) || !scalar.properties.changesWhenLowercased {
                bytes.append(contentsOf: scalar.utf8)
            } else {
                bytes.append(contentsOf: scalar.properties.lowercaseMapping.utf8)
            }
        }
        return bytes
    }

    /// `fold(text)`, or nil when that is the text's own UTF-8 (nothing in it changes when lowercased).
    static func foldIfNeeded(_ text: String) -> [UInt8]? {
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                if scalar.value >= 0x41 && scalar.value <= 0x5A { return fold(text) }
            } else if !hasNoCase(scalar), scalar.properties.changesWhenLowercased {
                return fold(text)
            }
        }
        return nil
    }

    /// Blocks with no cased letters (Hangul, CJK, kana), answered without Unicode's property tables.
    private static func hasNoCase(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0xAC00...0xD7A3, 0x1100...0x11FF, 0x3000...0x30FF, 0x3130...0x318F, 0x4E00...0x9FFF: return true
        default: return false
        }
    }

    /// Whether `haystack` holds `needle` as a run of bytes.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        haystack.withUnsafeBufferPointer { hay in needle.withUnsafeBufferPointer { contains(hay, $0) } }
    }

    static func contains(_ hay: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !needle.isEmpty else { return true }
        guard hay.count >= needle.count, let hayStart = hay.baseAddress, let needleStart = needle.baseAddress else {
            return false
        }
        // memchr (vectorised in glibc) finds each candidate for the first byte; memcmp checks the rest.
        let first = Int32(needle[0])
        let rest = needle.count - 1
        var at = hayStart
        var left = hay.count - rest
        while left > 0, let found = memchr(at, first, left) {
            let candidate = UnsafePointer(found.assumingMemoryBound(to: UInt8.self))
            if rest == 0 || memcmp(candidate + 1, needleStart + 1, rest) == 0 { return true }
            let skipped = candidate - at + 1
            at = candidate + 1
            left -= skipped
        }
        return false
    }

    /// The slots of `rows` (in order) whose rows match `needle`; nil as soon as `superseded` says a newer keystroke
    /// has arrived (asked once per chunk of rows), so that no keystroke waits for the work of one it replaced.
    static func filter(
        _ rows: ChunkedArray<Int32>, in slots: RowSlots, _ needle: [UInt8], superseded: () -> Bool
    ) -> ChunkedArray<Int32>? {
        guard !needle.isEmpty else { return rows }
        var result = ChunkedArray<Int32>()
        var chunk: [Int32] = []
        chunk.reserveCapacity(ChunkedArray<Int32>.chunkSize)
        let finished = needle.withUnsafeBufferPointer { pin -> Bool in
            for source in rows.chunks {
                if superseded() { return false }
                for slot in source where slots.matches(slot, pin) {
                    chunk.append(slot)
                    if chunk.count == ChunkedArray<Int32>.chunkSize {
                        result.append(chunk: chunk)
                        chunk = []
                        chunk.reserveCapacity(ChunkedArray<Int32>.chunkSize)
                    }
                }
            }
            return true
        }
        guard finished else { return nil }
        result.append(chunk: chunk)
        return result
    }
}

/// A memo in the list with its lowercased bytes, made once when the memo enters the list.
struct ListRow: Sendable, Hashable {
    let memo: Memo
    /// The content lowercased, as UTF-8; nil when that is the content's own UTF-8.
    let folded: [UInt8]?

    init(_ memo: Memo) {
        self.memo = memo
        folded = ListFilter.foldIfNeeded(memo.content)
    }

    func matches(_ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !needle.isEmpty else { return true }
        if let found = folded?.withUnsafeBufferPointer({ ListFilter.contains($0, needle) }) { return found }
        if let found = memo.content.utf8.withContiguousStorageIfAvailable({ ListFilter.contains($0, needle) }) {
            return found
        }
        return Array(memo.content.utf8).withUnsafeBufferPointer { ListFilter.contains($0, needle) }
    }

    func matches(_ needle: [UInt8]) -> Bool {
        needle.withUnsafeBufferPointer { matches($0) }
    }

    /// What a slot holds once its memo is removed (until the slot is reused).
    static let vacant = ListRow(Memo(
        id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), content: "", insertMicros: 0,
        updateMicros: 0, revision: 0))

    static func == (lhs: ListRow, rhs: ListRow) -> Bool { lhs.memo == rhs.memo }
    func hash(into hasher: inout Hasher) { hasher.combine(memo) }
}

/// Memos of the list, newest first, as the view reads them: a view of the rows' slots, made without copying.
public struct MemoRows: RandomAccessCollection, Sendable, Hashable {
    var rows: ChunkedArray<Int32>
    var slots: RowSlots

    public var startIndex: Int { 0 }
    public var endIndex: Int { rows.count }
    public subscript(index: Int) -> Memo { slots[rows[index]].memo }

    public struct Iterator: IteratorProtocol {
        var rows: FlattenSequence<[[Int32]]>.Iterator
        let slots: RowSlots

        public mutating func next() -> Memo? { rows.next().map { slots[$0].memo } }
    }

    /// Walks chunk by chunk: no search per memo.
    public func makeIterator() -> Iterator { Iterator(rows: rows.makeIterator(), slots: slots) }

    /// The same memos in the same order.
    public static func == (lhs: MemoRows, rhs: MemoRows) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for memo in self { hasher.combine(memo) }
    }

    /// The same memos in the same order as `memos`.
    public static func == (lhs: MemoRows, rhs: [Memo]) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }
}
