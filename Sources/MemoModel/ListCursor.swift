import Foundation

/// A place in the list (newest first by insert date, then by id read as 16 big-endian bytes): a page that starts
/// after it holds the memos listed after a memo with this insert date and id. It names a position, not a memo, so
/// it stays valid when the memo it came from is deleted or edited (an edit keeps the insert date).
public struct ListCursor: Sendable, Hashable, CustomStringConvertible {
    public var insertMicros: Int64
    public var id: UUID

    public init(insertMicros: Int64, id: UUID) {
        self.insertMicros = insertMicros
        self.id = id
    }

    /// The place of `memo` in the list.
    public init(after memo: Memo) {
        self.init(insertMicros: memo.insertMicros, id: memo.id)
    }

    /// Whether `memo` is listed after this place (older, or as old with a smaller id).
    public func precedes(_ memo: Memo) -> Bool {
        if memo.insertMicros != insertMicros { return memo.insertMicros < insertMicros }
        return memo.id.orderingValue < id.orderingValue
    }

    /// The token `memo-client` prints and reads: 48 lowercase hex digits, the insert date's 8 bytes (two's
    /// complement, big-endian) then the id's 16. Opaque to scripts: only this parser reads it.
    public var token: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        withUnsafeBytes(of: UInt64(bitPattern: insertMicros).bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(48)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads a token made by `token`; nil for anything else.
    public init?(token: String) {
        let utf8 = Array(token.utf8)
        guard utf8.count == 48 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        for index in stride(from: 0, to: 48, by: 2) {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        let micros = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let id = UUID(uuid: (bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15],
                             bytes[16], bytes[17], bytes[18], bytes[19], bytes[20], bytes[21], bytes[22], bytes[23]))
        self.init(insertMicros: Int64(bitPattern: micros), id: id)
    }

    public var description: String { token }
}

/// One page of the list: at most a limit of memos after a cursor, newest first, at one revision.
public struct ListPage: Sendable, Hashable {
    public var revision: UInt64
    public var memos: [Memo]
    /// More memos are listed after the last one of this page.
    public var more: Bool

    public init(revision: UInt64, memos: [Memo], more: Bool) {
        self.revision = revision
        self.memos = memos
        self.more = more
    }

    /// Where the next page starts: after this page's last memo, when more follow.
    public var next: ListCursor? {
        guard more, let last = memos.last else { return nil }
        return ListCursor(after: last)
    }
}
