import MemoCore
import Synchronization

/// The list's filter: a case-insensitive substring match decided on UTF-8 bytes (content and filter both
/// lowercased, then compared byte for byte, so an NFD memo does not match an NFC filter).
///
/// Lowercasing every memo on every keystroke cost about 20 µs a memo (2 s a keystroke at 100,000 memos), so each
/// memo's lowercased bytes are kept, keyed by id and checked against the content they were made from.
final class ListFilter: Sendable {
    private struct Folded {
        var content: String
        var bytes: [UInt8]
    }

    private let cache = Mutex<[UUIDKey: Folded]>([:])

    /// The filter's text as the bytes a memo must contain.
    static func needle(_ filter: String) -> [UInt8] { fold(filter) }

    /// `text` lowercased, as UTF-8; ASCII text without calling `lowercased()` (same result, far cheaper).
    static func fold(_ text: String) -> [UInt8] {
        var bytes = Array(text.utf8)
        if bytes.allSatisfy({ $0 < 0x80 }) {
            for index in bytes.indices where bytes[index] >= 0x41 && bytes[index] <= 0x5A { bytes[index] |= 0x20 }
            return bytes
        }
        return Array(text.lowercased().utf8)
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
        return cache.withLock { cache in
            // Forget memos long gone (deleted, or an old list) instead of growing forever.
            if cache.count > 2 * memos.count + 1024 { cache.removeAll(keepingCapacity: true) }
            return memos.filter { memo in
                let key = UUIDKey(memo.id)
                if let folded = cache[key], folded.content.hasSameBytes(as: memo.content) {
                    return Self.contains(folded.bytes, needle)
                }
                let bytes = Self.fold(memo.content)
                cache[key] = Folded(content: memo.content, bytes: bytes)
                return Self.contains(bytes, needle)
            }
        }
    }
}
