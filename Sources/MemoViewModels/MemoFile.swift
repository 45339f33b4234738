import MemoSystem

#if canImport(Glibc)
import Glibc
#endif

/// Writing a memo to a file the user named (`S` in the detail scene): private and whole.
///
/// The bytes go to a temporary file beside the target (`.memo-save-XXXXXX`), created with mode 0600 (so that no
/// other user can read the memo, even for a moment), flushed, then renamed over the target: an existing file is
/// replaced whole, never left half written, and ends up 0600 too. Errors name the target and say what the system
/// said (`strerror`), not what Foundation would wrap around it.
public enum MemoFile {
    /// A write that failed: the target's path and the system's reason.
    public struct WriteError: Error, Sendable, Hashable, CustomStringConvertible {
        public var path: String
        public var code: Int32

        public init(path: String, code: Int32) {
            self.path = path
            self.code = code
        }

        /// `strerror`'s text: "Permission denied".
        public var reason: String { String(cString: strerror(code)) }
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// What is at a path now.
    public enum Existing: Sendable, Hashable {
        case nothing
        case file
        case directory
    }

    /// Whether `path` names something already (a symbolic link counts as what it points to).
    public static func existing(_ path: String) -> Existing {
        var info = stat()
        guard stat(path, &info) == 0 else { return lstat(path, &info) == 0 ? .file : .nothing }
        return (info.st_mode & S_IFMT) == S_IFDIR ? .directory : .file
    }

    /// Writes `bytes` to `path` (replacing what is there) with mode 0600.
    /// - Throws: `WriteError` naming `path`.
    public static func write(_ bytes: [UInt8], to path: String) throws(WriteError) {
        if existing(path) == .directory { throw WriteError(path: path, code: EISDIR) }
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "" : String(path[..<$0]) } ?? "."
        // mkstemp: a name no one else has, created 0600 (whatever the umask), whatever the target's name length.
        var template = Array((folder + "/.memo-save-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw WriteError(path: path, code: errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // cannot fail on a descriptor just opened; the editor must not get it
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            try FileDescriptor.writeAll(fd, bytes)
        } catch {
            close(fd)
            unlink(temporary)
            throw WriteError(path: path, code: error.code)
        }
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            unlink(temporary)
            throw WriteError(path: path, code: code)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw WriteError(path: path, code: code)
        }
    }
}
