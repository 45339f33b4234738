import Foundation
import MemoModel
import MemoSystem
import MemoTLS
import MemoWire

/// A local write made while the server was away, waiting to be sent.
public struct QueuedWrite: Sendable, Hashable {
    public enum Kind: UInt8, Sendable {
        case create = 1
        case update = 2
        case delete = 3
    }

    public var kind: Kind
    /// A create's new memo (id, content, insert date); an update's memo with the new content; a delete's memo as
    /// it was known.
    public var memo: Memo
    /// The revision an update or delete started from (nil: whatever the server holds).
    public var expectedRevision: UInt64?
    /// It started from an earlier queued write of the same memo, whose answer gives the revision to expect.
    public var afterQueued: Bool

    public init(kind: Kind, memo: Memo, expectedRevision: UInt64?, afterQueued: Bool) {
        self.kind = kind
        self.memo = memo
        self.expectedRevision = expectedRevision
        self.afterQueued = afterQueued
    }

    /// How the mirror shows it until the server confirms it.
    var pendingForm: PendingWrite {
        switch kind {
        case .create: return .create(memo)
        case .update: return .update(memo)
        case .delete: return .delete(memo)
        }
    }
}

/// Who wrote an offline queue: the server address it was written for and the SHA-256 fingerprint of the client
/// certificate it was written with. A queue replays only under the identity that wrote it, so that writes made
/// with one certificate are never sent (and refused, and lost) under another.
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The `--server` value, as given.
    public var server: String
    /// `CertificateInfo.fingerprint` of the client certificate.
    public var fingerprint: String

    public init(server: String, fingerprint: String) {
        self.server = server
        self.fingerprint = fingerprint
    }

    /// The configuration's server and the fingerprint of its certificate file.
    /// - Throws: `TLSError` when the certificate cannot be read.
    public init(_ configuration: ClientConfiguration) throws {
        let certificate = try CertificateInfo(path: configuration.certificatePath)
        self.init(server: configuration.server, fingerprint: certificate.fingerprint)
    }

    public var description: String { "server \(server), certificate \(fingerprint.prefix(16))" }

    /// The start of a file bound to this identity: `magic`, the server and the fingerprint, the entry count.
    func fileHeader(_ magic: [UInt8], count: Int, capacity: Int) -> WireWriter {
        var writer = WireWriter(capacity: 96 + capacity)
        writer.bytes.append(contentsOf: magic)
        writer.string(server)
        writer.string(fingerprint)
        writer.u32(UInt32(count))
        return writer
    }

    /// Reads what `fileHeader` wrote after the magic, but the count.
    init(reading reader: inout WireReader) throws(WireError) {
        self.init(server: try reader.string("server"), fingerprint: try reader.string("fingerprint"))
    }
}

/// The offline write queue saved beside the mirror cache, so that quitting does not lose a write the server has
/// not seen.
///
/// Format: the 8 bytes `MEMOWRQ2`, the identity that wrote it (`string server`, `string fingerprint`, strings as
/// on the wire), `u32 count`, then per write `u8 kind` (1 create, 2 update, 3 delete), `u8 flags` (bit 0: an
/// expected revision follows; bit 1: after an earlier queued write), `u64 expected revision`, and the memo as on
/// the wire (PROTOCOL.md). Written to a temporary file, flushed and renamed (`DurableFile`, mode 0600): a crash
/// leaves the old queue or the new one. A `MEMOWRQ1` file (before the identity was recorded) is read with no
/// identity, which matches none: it is never replayed and never overwritten.
public enum WriteQueueFile {
    static let magic = Array("MEMOWRQ2".utf8)
    static let magicWithoutIdentity = Array("MEMOWRQ1".utf8)

    /// The queue's file beside a mirror cache, per certificate: `mirror-HOST_PORT.cache` gives
    /// `mirror-HOST_PORT.<first 16 hex digits of the fingerprint>.queue`.
    public static func path(besideCache cachePath: String, fingerprint: String) -> String {
        (cachePath.hasSuffix(".cache") ? String(cachePath.dropLast(6)) : cachePath) + "." + fingerprint.prefix(16)
            + ".queue"
    }

    /// The file's bytes for `writes`; nil for an empty queue (the file is then removed).
    public static func encode(_ writes: [QueuedWrite], identity: ClientIdentity) -> [UInt8]? {
        guard !writes.isEmpty else { return nil }
        var writer = identity.fileHeader(magic, count: writes.count, capacity: writes.count * 112)
        for write in writes { append(write, to: &writer) }
        return writer.bytes
    }

    static func append(_ write: QueuedWrite, to writer: inout WireWriter) {
        writer.u8(write.kind.rawValue)
        writer.u8((write.expectedRevision == nil ? 0 : 1) | (write.afterQueued ? 2 : 0))
        writer.u64(write.expectedRevision ?? 0)
        writer.memo(write.memo)
    }

    /// Writes the queue; an empty queue removes the file.
    public static func save(_ writes: [QueuedWrite], identity: ClientIdentity, to path: String) throws {
        try replace(path, with: encode(writes, identity: identity))
    }

    /// Replaces `path` with `bytes` (mode 0600, durably), or removes it for nil; creates the folder (0700).
    static func replace(_ path: String, with bytes: [UInt8]?) throws {
        guard let bytes else {
            if FileManager.default.fileExists(atPath: path) {
                try FileManager.default.removeItem(at: URL(fileURLWithPath: path))
            }
            return
        }
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        do {
            try DurableFile.replace(path, bytes)
        } catch {
            throw MemoError.storage(error.message)
        }
    }

    /// The writes saved at `path`, oldest first, and the identity that wrote them (nil for a `MEMOWRQ1` file);
    /// empty with no identity when there is no file.
    /// - Throws: `MemoError.storage` for a file that is not a write queue or is cut short.
    public static func load(from path: String) throws -> (identity: ClientIdentity?, writes: [QueuedWrite]) {
        guard FileManager.default.fileExists(atPath: path) else { return (nil, []) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let head = bytes.count >= magic.count ? Array(bytes[0..<magic.count]) : []
        guard head == magic || head == magicWithoutIdentity else {
            throw MemoError.storage("\(path) is not a memo write queue")
        }
        var reader = WireReader(Array(bytes[magic.count...]))
        do {
            var identity: ClientIdentity?
            if head == magic {
                identity = try ClientIdentity(reading: &reader)
            }
            let count = try reader.count("write count", minimumSize: 10 + Message.memoFixedSize)
            var writes: [QueuedWrite] = []
            for _ in 0..<count { writes.append(try read(from: &reader, path)) }
            try reader.finish()
            return (identity, writes)
        } catch let error as WireError {
            throw MemoError.storage("\(path) is damaged: \(error)")
        }
    }

    static func read(from reader: inout WireReader, _ path: String) throws -> QueuedWrite {
        let (kind, flags, expected, memo) =
            (try reader.u8("kind"), try reader.u8("flags"), try reader.u64("expected revision"), try reader.memo())
        guard let kind = QueuedWrite.Kind(rawValue: kind) else {
            throw MemoError.storage("\(path) holds a write of unknown kind \(kind)")
        }
        return QueuedWrite(
            kind: kind, memo: memo, expectedRevision: flags & 1 != 0 ? expected : nil, afterQueued: flags & 2 != 0)
    }
}
