import Foundation
import MemoModel
import MemoWire

/// A queued write the server refused when it was replayed: never deleted, it waits in the "not saved" list (kept on
/// disk beside the queue) until the user retries it, saves it as a new memo, or discards it.
public struct NotSavedWrite: Sendable, Hashable, Identifiable {
    /// This entry's own id (not the memo's: one memo may have several entries).
    public var id: UUID
    /// The write as the user last made it (later queued writes of the same memo folded in).
    public var write: QueuedWrite
    /// The server's reason, as one line.
    public var reason: String
    /// Someone else changed or deleted the memo first.
    public var isConflict: Bool
    /// The memo was deleted elsewhere: a retry cannot edit it, `save as new` keeps the text.
    public var deletedElsewhere: Bool
    /// When the server refused it, microseconds since the epoch.
    public var refusedMicros: Int64

    public init(
        id: UUID = UUID(), write: QueuedWrite, reason: String, isConflict: Bool, deletedElsewhere: Bool,
        refusedMicros: Int64 = Date().unixMicros
    ) {
        self.id = id
        self.write = write
        self.reason = reason
        self.isConflict = isConflict
        self.deletedElsewhere = deletedElsewhere
        self.refusedMicros = refusedMicros
    }

    /// The text the user typed (a delete's: the memo as it was).
    public var content: String { write.memo.content }
}

/// The "not saved" list's file, beside the queue: `mirror-HOST_PORT.<fingerprint>.queue` gives
/// `mirror-HOST_PORT.<fingerprint>.notsaved`.
///
/// Format: the 8 bytes `MEMONSV1`, the identity (`string server`, `string fingerprint`), `u32 count`, then per entry
/// `uuid id`, `string reason`, `u8 flags` (bit 0 conflict, bit 1 deleted elsewhere), `i64 refused micros`, and the
/// write as in the queue file. Mode 0600, written durably; an empty list removes the file.
public enum NotSavedFile {
    static let magic = Array("MEMONSV1".utf8)

    public static func path(besideQueue queuePath: String) -> String {
        (queuePath.hasSuffix(".queue") ? String(queuePath.dropLast(6)) : queuePath) + ".notsaved"
    }

    /// The file's bytes; nil for an empty list.
    public static func encode(_ entries: [NotSavedWrite], identity: ClientIdentity) -> [UInt8]? {
        guard !entries.isEmpty else { return nil }
        var writer = identity.fileHeader(magic, count: entries.count, capacity: entries.count * 160)
        for entry in entries {
            writer.uuid(entry.id)
            writer.string(entry.reason)
            writer.u8((entry.isConflict ? 1 : 0) | (entry.deletedElsewhere ? 2 : 0))
            writer.i64(entry.refusedMicros)
            WriteQueueFile.append(entry.write, to: &writer)
        }
        return writer.bytes
    }

    /// The entries saved at `path` and the identity that wrote them; empty with no identity when there is no file.
    /// - Throws: `MemoError.storage` for a file that is not a not-saved list or is cut short.
    public static func load(from path: String) throws -> (identity: ClientIdentity?, entries: [NotSavedWrite]) {
        guard FileManager.default.fileExists(atPath: path) else { return (nil, []) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else {
            throw MemoError.storage("\(path) is not a memo not-saved list")
        }
        var reader = WireReader(Array(bytes[magic.count...]))
        do {
            let identity = try ClientIdentity(reading: &reader)
            let count = try reader.count("entry count", minimumSize: 16 + 4 + 1 + 8 + 10 + Message.memoFixedSize)
            var entries: [NotSavedWrite] = []
            for _ in 0..<count {
                let (id, reason) = (try reader.uuid("id"), try reader.string("reason"))
                let (flags, micros) = (try reader.u8("flags"), try reader.i64("refused"))
                let write = try WriteQueueFile.read(from: &reader, path)
                entries.append(NotSavedWrite(
                    id: id, write: write, reason: reason, isConflict: flags & 1 != 0, deletedElsewhere: flags & 2 != 0,
                    refusedMicros: micros))
            }
            try reader.finish()
            return (identity, entries)
        } catch let error as WireError {
            throw MemoError.storage("\(path) is damaged: \(error)")
        }
    }
}
