import Foundation
import MemoModel

/// The payload of a notification on `PostgresSQL.channel`, sent by a server's claimer after each claim
/// (`PostgresSQL.notifyDurable`): the durable head, which PostgreSQL fills in, then what the claimer appends
/// (`suffix`), built from the changes it already holds, so that PostgreSQL runs no query for it:
///
///     payload = head [ "," origin [ "," changes ] ]
///
/// `head` is a decimal (the largest claim in `memo_durable`), `origin` the sending process's tag (a decimal,
/// `PostgresStore`'s own), `changes` the base64 (RFC 4648, with padding) of the sender's changes that its claim
/// covered, in revision order, each as bytes (integers big-endian):
///
///     change = revision:u64 kind:u8 restored:u8 id:16 insert:i64 update:i64
///              name-length:u32 name serial-length:u32 serial content-length:u32 content
///
/// (`kind` 1 create, 2 update, 3 delete; `restored` 0 or 1; strings UTF-8). An empty `changes` carries every change
/// of the sender's (none). A payload without `changes` announces the head alone: the sender's changes did not fit
/// (PostgreSQL takes payloads under 8,000 bytes), or it is an older memo-server that sends the head only; the
/// others then read the changes table. Base64 keeps the payload ASCII, whatever the database's encoding, and lets
/// a content hold any byte.
enum FeedPayload {
    /// The most bytes of encoded changes one payload carries: base64 makes 7,868 of them at most, which with the
    /// head's and the origin's at most 20 digits each and two commas stays under PostgreSQL's 8,000.
    static let maxEncodedBytes = 5_900
    /// The bytes of a change besides its three strings.
    static let fixedBytes = 8 + 1 + 1 + 16 + 8 + 8 + 3 * 4

    /// What a payload announces.
    struct Announcement: Equatable {
        let head: UInt64
        /// The sender's tag; nil from an older memo-server.
        let origin: UInt64?
        /// The sender's changes its claim covered, in revision order; nil when they were not carried.
        let changes: [Change]?
    }

    /// What the claimer appends to the head for these changes (its own, in revision order): the origin and the
    /// changes when they fit, the origin alone when they do not.
    static func suffix(origin: UInt64, changes: [Change]) -> String {
        guard let encoded = encode(changes) else { return ",\(origin)" }
        return ",\(origin)," + Data(encoded).base64EncodedString()
    }

    /// The changes as bytes; nil when they take more than `maxEncodedBytes`.
    static func encode(_ changes: [Change]) -> [UInt8]? {
        var size = 0
        for change in changes {
            size += fixedBytes + change.memo.author.name.utf8.count + change.memo.author.serial.utf8.count
                + change.memo.content.utf8.count
            if size > maxEncodedBytes { return nil }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        for change in changes {
            append(change.revision, to: &bytes)
            bytes.append(change.kind.rawValue)
            bytes.append(change.restored ? 1 : 0)
            withUnsafeBytes(of: change.memo.id.uuid) { bytes.append(contentsOf: $0) }
            append(UInt64(bitPattern: change.memo.insertMicros), to: &bytes)
            append(UInt64(bitPattern: change.memo.updateMicros), to: &bytes)
            for text in [change.memo.author.name, change.memo.author.serial, change.memo.content] {
                let utf8 = Array(text.utf8)
                append(UInt32(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
            }
        }
        return bytes
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The head alone, read without decoding anything else (a server's own notifications need no more).
    static func head(_ payload: [UInt8]) -> UInt64? {
        decimal(payload.prefix { $0 != UInt8(ascii: ",") })
    }

    /// The sender's tag, without decoding the changes; nil when there is none.
    static func origin(_ payload: [UInt8]) -> UInt64? {
        let fields = payload.split(separator: UInt8(ascii: ","), maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count >= 2 else { return nil }
        return decimal(fields[1])
    }

    /// Reads a payload; nil when it is not one (the feed then reads the changes table, as for any hint). Every
    /// change carried must be at or below the head, and their revisions must increase: the notification runs
    /// even when its claim failed (a transaction of its own), and then only a head another claim reached makes
    /// its changes durable.
    static func parse(_ payload: [UInt8]) -> Announcement? {
        let fields = payload.split(separator: UInt8(ascii: ","), maxSplits: 2, omittingEmptySubsequences: false)
        guard let head = decimal(fields[0]) else { return nil }
        guard fields.count >= 2 else { return Announcement(head: head, origin: nil, changes: nil) }
        guard let origin = decimal(fields[1]) else { return nil }
        guard fields.count == 3 else { return Announcement(head: head, origin: origin, changes: nil) }
        guard let data = Data(base64Encoded: Data(fields[2])), let changes = decode(Array(data)),
            changes.last.map({ $0.revision <= head }) ?? true
        else { return nil }
        return Announcement(head: head, origin: origin, changes: changes)
    }

    private static func decimal(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 19, bytes.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + UInt64($1 - UInt8(ascii: "0")) }
    }

    /// The changes `encode` made; nil when the bytes are not exactly that.
    static func decode(_ bytes: [UInt8]) -> [Change]? {
        var at = 0
        func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard bytes.count - at >= MemoryLayout<T>.size else { return nil }
            var value: T = 0
            for _ in 0..<MemoryLayout<T>.size {
                value = value << 8 | T(bytes[at])
                at += 1
            }
            return value
        }
        func text() -> String? {
            guard let length = integer(UInt32.self), bytes.count - at >= Int(length) else { return nil }
            defer { at += Int(length) }
            return String(decoding: bytes[at..<at + Int(length)], as: UTF8.self)
        }
        var changes: [Change] = []
        while at < bytes.count {
            guard let revision = integer(UInt64.self), revision > (changes.last?.revision ?? 0),
                let kindByte = integer(UInt8.self), let kind = ChangeKind(rawValue: kindByte),
                let restored = integer(UInt8.self), restored <= 1, bytes.count - at >= 16
            else { return nil }
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: bytes[at..<at + 16]) }
            at += 16
            guard let insert = integer(UInt64.self), let update = integer(UInt64.self), let name = text(),
                let serial = text(), let content = text()
            else { return nil }
            let memo = Memo(
                id: UUID(uuid: uuid), content: content, insertMicros: Int64(bitPattern: insert),
                updateMicros: Int64(bitPattern: update), revision: revision,
                author: Author(name: name, serial: serial))
            changes.append(Change(revision: revision, kind: kind, memo: memo, restored: restored == 1))
        }
        return changes
    }
}
