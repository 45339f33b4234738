import Foundation
import MemoModel

/// The payload of a notification on `PostgresSQL.channel` (made by `PostgresSQL.notifyFunction`): the durable head
/// as a decimal, then, when they fit, the changes of the run from `first` up to the head, one after another:
///
///     payload = head [ "," first change{head - first + 1} ]
///     change  = "\n" kind restored id "," insert "," update "," field(author name) field(author serial)
///               field(content)
///     field   = length ":" bytes
///
/// `kind` is one digit (1 create, 2 update, 3 delete), `restored` one digit (1 when the change restored a
/// version), `id` the memo's 32 hexadecimal digits without dashes, `insert` and `update` the dates in
/// microseconds (signed decimals), and each field a decimal count of bytes, a colon, and that many bytes of UTF-8
/// (lengths count bytes, so a content holding a comma, a colon or a newline needs no escaping). A payload that is
/// only a decimal, from an older memo-server or when the changes did not fit, announces the head alone.
enum FeedPayload {
    /// The most changes one payload carries.
    static let maxChanges = 64
    /// The most bytes the carried changes may take, counted as their contents and authors plus 120 bytes for each
    /// change's other fields (at most 96): with the header's at most 41, well under the 8,000 bytes PostgreSQL
    /// takes at most.
    static let budget = 7_800

    /// What a payload announces: the durable head, and the changes it carries (in revision order, ending at the
    /// head, none when it carries none).
    struct Announcement {
        let head: UInt64
        let changes: [Change]
    }

    /// Reads a payload; nil when it is not one (the feed then reads the changes table, as for any hint).
    static func parse(_ bytes: [UInt8]) -> Announcement? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer)
            return reader.announcement()
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        mutating func announcement() -> Announcement? {
            guard let head = unsigned() else { return nil }
            if at == bytes.count { return Announcement(head: head, changes: []) }
            guard take(UInt8(ascii: ",")), let first = unsigned(), first >= 1, first <= head,
                head - first < UInt64(FeedPayload.maxChanges)
            else { return nil }
            var changes: [Change] = []
            changes.reserveCapacity(Int(head - first) + 1)
            for revision in first...head {
                guard let change = change(revision) else { return nil }
                changes.append(change)
            }
            return at == bytes.count ? Announcement(head: head, changes: changes) : nil
        }

        private mutating func change(_ revision: UInt64) -> Change? {
            guard take(UInt8(ascii: "\n")), at + 2 <= bytes.count,
                let kind = ChangeKind(rawValue: bytes[at] &- UInt8(ascii: "0")),
                bytes[at + 1] == UInt8(ascii: "0") || bytes[at + 1] == UInt8(ascii: "1")
            else { return nil }
            let restored = bytes[at + 1] == UInt8(ascii: "1")
            at += 2
            guard let id = uuid(), take(UInt8(ascii: ",")), let insert = signed(), take(UInt8(ascii: ",")),
                let update = signed(), take(UInt8(ascii: ",")), let name = field(), let serial = field(),
                let content = field()
            else { return nil }
            let memo = Memo(
                id: id, content: content, insertMicros: insert, updateMicros: update, revision: revision,
                author: Author(name: name, serial: serial))
            return Change(revision: revision, kind: kind, memo: memo, restored: restored)
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        /// A decimal of 1 to 19 digits (every bigint that is not negative).
        private mutating func unsigned() -> UInt64? {
            var value: UInt64 = 0
            let start = at
            while at < bytes.count, at - start < 19, bytes[at] &- UInt8(ascii: "0") < 10 {
                value = value * 10 + UInt64(bytes[at] &- UInt8(ascii: "0"))
                at += 1
            }
            return at > start ? value : nil
        }

        private mutating func signed() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            guard let magnitude = unsigned(), magnitude <= UInt64(Int64.max) + (negative ? 1 : 0) else { return nil }
            return negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude)
        }

        private mutating func uuid() -> UUID? {
            guard at + 32 <= bytes.count else { return nil }
            var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let valid = withUnsafeMutableBytes(of: &value) { out in
                for index in 0..<16 {
                    guard let high = Self.hex(bytes[at + 2 * index]), let low = Self.hex(bytes[at + 2 * index + 1])
                    else { return false }
                    out[index] = high << 4 | low
                }
                return true
            }
            guard valid else { return nil }
            at += 32
            return UUID(uuid: value)
        }

        private static func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        /// A length, a colon, and that many bytes, as UTF-8 text.
        private mutating func field() -> String? {
            guard let length = unsigned(), take(UInt8(ascii: ":")), length <= UInt64(bytes.count - at) else {
                return nil
            }
            let start = at
            at += Int(length)
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        }
    }
}
