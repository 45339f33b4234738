import Foundation
import MemoModel
import MemoWire

/// The mirror saved to a file, so that a client can show the list before the server answers.
///
/// Format: the 8 bytes `MEMOMIR2`, `u64 revision`, `u8 role` (0 unknown, 1 read-write, 2 read-only: the role the
/// server last gave the certificate), `string fingerprint` (that certificate's), `u32 count`, then `count` memos as
/// on the wire (PROTOCOL.md). A `MEMOMIR1` file (no role) still loads. Written to a temporary file with mode 0600
/// and renamed, so a reader never sees half a cache and nobody else can read it.
public enum MirrorCache {
    static let magic = Array("MEMOMIR2".utf8)
    static let magicWithoutRole = Array("MEMOMIR1".utf8)

    /// What a cache file holds.
    public struct Contents: Sendable, Hashable {
        public var revision: UInt64
        public var memos: [Memo]
        /// The role the server gave the certificate `fingerprint` names; nil when unknown.
        public var role: Role?
        public var fingerprint: String

        public init(revision: UInt64, memos: [Memo], role: Role? = nil, fingerprint: String = "") {
            self.revision = revision
            self.memos = memos
            self.role = role
            self.fingerprint = fingerprint
        }
    }

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

    /// Writes the memos and their revision (no role), creating the directory if needed.
    public static func save(revision: UInt64, memos: [Memo], to path: String) throws {
        try save(Contents(revision: revision, memos: memos), to: path)
    }

    /// Writes the cache (mode 0600), creating the directory (0700) if needed.
    public static func save(_ contents: Contents, to path: String) throws {
        var writer = WireWriter(capacity: 96 + contents.memos.count * 96)
        writer.bytes.append(contentsOf: magic)
        writer.u64(contents.revision)
        writer.u8(contents.role?.rawValue ?? 0)
        writer.string(contents.fingerprint)
        writer.u32(UInt32(contents.memos.count))
        for memo in contents.memos { writer.memo(memo) }
        try WriteQueueFile.replace(path, with: writer.bytes)
    }

    /// The cache saved at `path`, or nil when there is no cache file.
    /// - Throws: `MemoError.storage` for a file that is not a mirror cache or is cut short.
    public static func load(from path: String) throws -> Contents? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let bytes = [UInt8](data)
        let head = bytes.count >= magic.count ? Array(bytes[0..<magic.count]) : []
        guard head == magic || head == magicWithoutRole else {
            throw MemoError.storage("\(path) is not a memo mirror cache")
        }
        var reader = WireReader(Array(bytes[magic.count...]))
        do throws(WireError) {
            var contents = Contents(revision: try reader.u64("revision"), memos: [])
            if head == magic {
                contents.role = Role(rawValue: try reader.u8("role"))
                contents.fingerprint = try reader.string("fingerprint")
            }
            let count = try reader.count("memo count", minimumSize: Message.memoFixedSize)
            contents.memos.reserveCapacity(count)
            for _ in 0..<count { contents.memos.append(try reader.memo()) }
            try reader.finish()
            return contents
        } catch {
            throw MemoError.storage("\(path) is damaged: \(error)")
        }
    }
}
