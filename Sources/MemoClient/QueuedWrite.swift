import Foundation
import MemoCore
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

/// The offline write queue saved beside the mirror cache, so that quitting does not lose a write the server has
/// not seen.
///
/// Format: the 8 bytes `MEMOWRQ1`, `u32 count`, then per write `u8 kind` (1 create, 2 update, 3 delete), `u8 flags`
/// (bit 0: an expected revision follows; bit 1: after an earlier queued write), `u64 expected revision`, and the
/// memo as on the wire (PROTOCOL.md). Written to a temporary file, flushed and renamed (`DurableFile`): a crash
/// leaves the old queue or the new one.
public enum WriteQueueFile {
    static let magic = Array("MEMOWRQ1".utf8)

    /// The queue's file beside a mirror cache: `mirror-HOST_PORT.cache` gives `mirror-HOST_PORT.queue`.
    public static func path(besideCache cachePath: String) -> String {
        (cachePath.hasSuffix(".cache") ? String(cachePath.dropLast(6)) : cachePath) + ".queue"
    }

    /// Writes the queue; an empty queue removes the file.
    public static func save(_ writes: [QueuedWrite], to path: String) throws {
        let url = URL(fileURLWithPath: path)
        if writes.isEmpty {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(at: url) }
            return
        }
        var writer = WireWriter(capacity: 16 + writes.count * 112)
        writer.bytes.append(contentsOf: magic)
        writer.u32(UInt32(writes.count))
        for write in writes {
            writer.u8(write.kind.rawValue)
            writer.u8((write.expectedRevision == nil ? 0 : 1) | (write.afterQueued ? 2 : 0))
            writer.u64(write.expectedRevision ?? 0)
            writer.memo(write.memo)
        }
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try DurableFile.replace(path, writer.bytes)
    }

    /// The writes saved at `path`, oldest first; empty when there is no file.
    /// - Throws: `MemoError.storage` for a file that is not a write queue or is cut short.
    public static func load(from path: String) throws -> [QueuedWrite] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else {
            throw MemoError.storage("\(path) is not a memo write queue")
        }
        var reader = WireReader(Array(bytes[magic.count...]))
        var records: [(kind: UInt8, flags: UInt8, expected: UInt64, memo: Memo)] = []
        do throws(WireError) {
            let count = try reader.count("write count", minimumSize: 10 + Message.memoFixedSize)
            for _ in 0..<count {
                records.append(
                    (try reader.u8("kind"), try reader.u8("flags"), try reader.u64("expected revision"),
                     try reader.memo()))
            }
            try reader.finish()
        } catch {
            throw MemoError.storage("\(path) is damaged: \(error)")
        }
        return try records.map { record in
            guard let kind = QueuedWrite.Kind(rawValue: record.kind) else {
                throw MemoError.storage("\(path) holds a write of unknown kind \(record.kind)")
            }
            return QueuedWrite(
                kind: kind, memo: record.memo, expectedRevision: record.flags & 1 != 0 ? record.expected : nil,
                afterQueued: record.flags & 2 != 0)
        }
    }
}
