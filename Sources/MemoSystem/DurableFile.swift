import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Small files written so that they survive a crash or a power cut whole or not at all: the offline write queue,
/// and files that must be created private (mode 0600) from their first byte.
public enum DurableFile {
    /// A call that failed, and on which file: `creating PATH: No space left on device`. The client wraps it in
    /// `MemoError.storage`, so its messages read as before this type moved here.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String

        public init(_ message: String) { self.message = message }

        public var description: String { message }
    }

    /// Creates `path`, which must not exist, with `mode`, writes `bytes` and flushes them to disk.
    /// - Throws: `Failure` saying which call failed.
    public static func create(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("creating", path) }
        defer { close(fd) }
        try writeAll(fd, bytes, path)
        guard fsync(fd) == 0 else { throw failure("flushing", path) }
    }

    /// Replaces `path` with `bytes`: written to a temporary file beside it, flushed, renamed over it, and the folder
    /// flushed, so that a reader finds the old file or the new one, never half of one.
    public static func replace(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        do throws(Failure) {
            try create(temporary, bytes, mode: mode)
            guard rename(temporary, path) == 0 else { throw failure("renaming to", path) }
        } catch {
            unlink(temporary)
            throw error
        }
        let folder = (path as NSString).deletingLastPathComponent
        let directory = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            // The rename is durable once its folder is; a folder that cannot be opened still has the new file.
            _ = fsync(directory)
            close(directory)
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ path: String) throws(Failure) {
        do {
            try FileDescriptor.writeAll(fd, bytes)
        } catch {
            throw Failure("writing \(path): \(error.reason)")
        }
    }

    private static func failure(_ what: String, _ path: String) -> Failure {
        Failure("\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
