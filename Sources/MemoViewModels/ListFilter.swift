import MemoCore
import Synchronization

/// The list's filter: a case-insensitive substring match decided on UTF-8 bytes (content and filter both
/// lowercased, then compared byte for byte, so an NFD memo does not match an NFC filter).
///
/// Lowercasing every memo on every keystroke cost about 20 µs a memo (2 s a keystroke at 100,000 memos), so each
/// memo's lowercased bytes are kept, keyed by id and checked against the content they were made from, and the
/// bytes of the list last searched (and of the last result) are kept in its order.
final class ListFilter: Sendable {
    private struct Folded {
        var content: String
        var bytes: [UInt8]
    }

    /// A list searched before and its memos' bytes in the same order: every keystroke searches the same list (or
    /// the last result), so most searches need no lookup by id at all.
    private struct Aligned {
        var memos: [Memo]
        var folded: [[UInt8]]

        func holds(_ other: [Memo]) -> Bool {
            memos.count == other.count && memos.withUnsafeBufferPointer { mine in
                other.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress }
            }
        }
    }

    private struct State {
        var byID: [UUIDKey: Folded] = [:]
        var all: Aligned?
        var lastResult: Aligned?
    }

    private let state = Mutex(State())

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
            } else if scalar.properties.changesWhenLowercased {
                bytes.append(contentsOf: scalar.properties.lowercaseMapping.utf8)
            } else {
                bytes.append(contentsOf: UTF8.encode(scalar)!)
            }
        }
        return bytes
    }

    /// Whether `haystack` holds `needle` as a run of bytes.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        let first = needle[0]
        let last = haystack.count - needle.count
        return haystack.withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { pin in
                var start = 0
                while start <= last {
                    if hay[start] == first {
                        var offset = 1
                        while offset < pin.count, hay[start + offset] == pin[offset] { offset += 1 }
                        if offset == pin.count { return true }
                    }
                    start += 1
                }
                return false
            }
        }
    }

    /// The memos of `memos` (in order) whose lowercased content holds `needle`.
    func filter(_ memos: [Memo], _ needle: [UInt8]) -> [Memo] {
        guard !needle.isEmpty else { return memos }
        return state.withLock { state in
            let aligned: Aligned
            if let all = state.all, all.holds(memos) {
                aligned = all
            } else if let last = state.lastResult, last.holds(memos) {
                aligned = last
            } else {
                aligned = Aligned(memos: memos, folded: Self.folded(memos, cache: &state.byID))
                state.all = aligned
            }
            var result = Aligned(memos: [], folded: [])
            for index in aligned.memos.indices where Self.contains(aligned.folded[index], needle) {
                result.memos.append(aligned.memos[index])
                result.folded.append(aligned.folded[index])
            }
            state.lastResult = result
            return result.memos
        }
    }

    /// Each memo's folded bytes, from the cache when its content has not changed.
    private static func folded(_ memos: [Memo], cache: inout [UUIDKey: Folded]) -> [[UInt8]] {
        // Forget memos long gone (deleted, or an old list) instead of growing forever.
        if cache.count > 2 * memos.count + 1024 { cache.removeAll(keepingCapacity: true) }
        return memos.map { memo in
            let key = UUIDKey(memo.id)
            if let folded = cache[key], folded.content.hasSameBytes(as: memo.content) { return folded.bytes }
            let bytes = fold(memo.content)
            cache[key] = Folded(content: memo.content, bytes: bytes)
            return bytes
        }
    }
}
