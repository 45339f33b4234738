#if canImport(Glibc)
import Glibc
#endif

/// A write(2) that failed, with its errno.
public struct WriteFailure: Error, Sendable, Equatable {
    public let code: Int32

    public init(code: Int32) { self.code = code }

    /// strerror's text for the code.
    public var reason: String { String(cString: strerror(code)) }
}

/// The one loop that writes a whole buffer to a file descriptor, for the terminal, command output, logs and files.
public enum FileDescriptor {
    /// Writes every byte of `bytes`, retrying on EINTR and, on a non-blocking descriptor that is full (EAGAIN),
    /// waiting with poll(2) until it takes more, so a short write never loses the rest.
    /// - Throws: the first other failure (EPIPE for a reader that went away, ENOSPC, ...).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(WriteFailure) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, base + offset, bytes.count - offset)
            if written >= 0 {
                offset += written
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                var wanted = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&wanted, 1, -1) < 0, errno != EINTR { throw WriteFailure(code: errno) }
            default:
                throw WriteFailure(code: errno)
            }
        }
    }

    /// `writeAll` for an array of bytes.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(WriteFailure) {
        // withUnsafeBytes rethrows untyped errors: carry the failure out as a value.
        let failure = bytes.withUnsafeBytes { buffer -> WriteFailure? in
            do throws(WriteFailure) {
                try writeAll(fd, buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// `writeAll` for a string's UTF-8 bytes.
    public static func writeAll(_ fd: Int32, _ text: String) throws(WriteFailure) {
        try writeAll(fd, Array(text.utf8))
    }

    /// The whole file at `path`, read(2) retried on EINTR; nil when it cannot be opened or read, or holds more than
    /// `limit` bytes. With `noFollow` a symbolic link is not followed (the open fails).
    public static func readAll(path: String, limit: Int = .max, noFollow: Bool = false) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (noFollow ? O_NOFOLLOW : 0))
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0, bytes.count + count <= limit else { return nil }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }
}
