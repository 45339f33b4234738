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
}
