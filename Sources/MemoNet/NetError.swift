import Glibc

/// A failed system call or name lookup: the operation, the `errno` (0 when none applies) and a readable message.
public struct NetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call or step that failed, such as `"accept4"` or `"getaddrinfo(example.org)"`.
    public let operation: String
    /// The `errno` value, or 0 when the failure did not come from `errno` (parse errors, `getaddrinfo`).
    public let errno: Int32
    /// `strerror(errno)`, or the library's own message.
    public let message: String

    /// An error for `operation` from an `errno` value, with its `strerror` text.
    public init(errno: Int32, operation: String) {
        self.operation = operation
        self.errno = errno
        self.message = String(cString: strerror(errno))
    }

    /// An error that has no `errno`, with its own message.
    public init(operation: String, message: String) {
        self.operation = operation
        self.errno = 0
        self.message = message
    }

    /// True when the process or system ran out of descriptors or buffers (EMFILE, ENFILE, ENOBUFS, ENOMEM).
    ///
    /// An acceptor that meets this error should stop accepting for a while instead of retrying at once:
    /// the pending connection stays queued and a level-triggered listener would report it again immediately.
    public var isResourceExhaustion: Bool {
        errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM
    }

    /// True when the peer reset or broke the connection (ECONNRESET, EPIPE, ETIMEDOUT, EHOSTUNREACH).
    public var isConnectionLoss: Bool {
        errno == ECONNRESET || errno == EPIPE || errno == ETIMEDOUT || errno == EHOSTUNREACH || errno == ENETUNREACH
    }

    public var description: String {
        errno == 0 ? "\(operation): \(message)" : "\(operation): \(message) (errno \(errno))"
    }
}
