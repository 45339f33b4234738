import Foundation
import MemoCore
import MemoWire

/// The mirror saved to a file, so that a client can show the list before the server answers.
///
/// Format: the 8 bytes `MEMOMIR1`, `u64 revision`, `u32 count`, then `count` memos as on the wire (PROTOCOL.md).
/// Written to a temporary file and renamed, so a reader never sees half a cache.
public enum MirrorCache {
    static let magic = Array("MEMOMIR1".utf8)

    /// `$XDG_CACHE_HOME/memo/` (default `~/.cache/memo/`) plus a file named after the server.
    public static func defaultPath(server: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        -> String
    {
        var base = environment["XDG_CACHE_HOME"] ?? ""
        if base.isEmpty || !base.hasPrefix("/") {
            base = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.cache"
        }
        let name = server.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
        return base + "/memo/mirror-" + String(name) + ".cache"
    }

    /// Writes the memos and their revision, creating the directory if needed.
    public static func save(revision: UInt64, memos: [Memo], to path: String) throws {
        var writer = WireWriter(capacity: 16 + memos.count * 96)
        writer.bytes.append(contentsOf: magic)
        writer.u64(revision)
        writer.u32(UInt32(memos.count))
        for memo in memos { writer.memo(memo) }
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try Data(writer.bytes).write(to: url, options: .atomic)
    }

    /// The memos and revision saved at `path`, or nil when there is no cache file.
    /// - Throws: `MemoError.storage` for a file that is not a mirror cache or is cut short.
    public static func load(from path: String) throws -> (revision: UInt64, memos: [Memo])? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else {
            throw MemoError.storage("\(path) is not a memo mirror cache")
        }
        var reader = WireReader(Array(bytes[magic.count...]))
        do throws(WireError) {
            let revision = try reader.u64("revision")
            let count = try reader.count("memo count", minimumSize: Message.memoFixedSize)
            var memos: [Memo] = []
            memos.reserveCapacity(count)
            for _ in 0..<count { memos.append(try reader.memo()) }
            try reader.finish()
            return (revision, memos)
        } catch {
            throw MemoError.storage("\(path) is damaged: \(error)")
        }
    }
}
