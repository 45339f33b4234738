#if canImport(Glibc)
import Glibc
#endif
import MemoSystem

/// Buffered writes to a file descriptor (named apart from Foundation's `OutputStream`).
///
/// A reader that went away (EPIPE, as when `head` has read enough) calls `onBrokenPipe` once and drops what
/// follows: the library never ends the process; `memo-client` passes a handler that exits 0 quietly.
public final class BufferedOutput: @unchecked Sendable {
    // Unchecked: used from one thread at a time (the command's task, or the client's loop thread for watch,
    // which only writes after the command stopped writing).
    private let fd: Int32
    private let onBrokenPipe: @Sendable () -> Void
    private var buffer: [UInt8] = []
    private var broken = false

    public init(fd: Int32, onBrokenPipe: @escaping @Sendable () -> Void = {}) {
        self.fd = fd
        self.onBrokenPipe = onBrokenPipe
    }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    public func line(_ text: String) {
        write(text)
        write("\n")
    }

    public func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard !broken else { return }
        do {
            try FileDescriptor.writeAll(fd, buffer)
        } catch where error.code == EPIPE {
            broken = true
            onBrokenPipe()
        } catch {
            // Another failure (a full disk behind a redirection): what was not written is lost, as with printf.
        }
    }
}
