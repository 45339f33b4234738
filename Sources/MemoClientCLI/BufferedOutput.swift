import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MemoSystem

/// Buffered writes to a file descriptor (named apart from Foundation's `OutputStream`).
///
/// A reader that went away (EPIPE, as when `head` has read enough) calls `onBrokenPipe` once and drops what
/// follows; any other failed write (ENOSPC, EFBIG, EIO...) calls `onWriteFailure` once and drops what follows.
/// The library never ends the process: `memo-client` passes handlers that exit 0 quietly for the first and say
/// what failed and exit 1 for the second.
public final class BufferedOutput: @unchecked Sendable {
    // Unchecked: used from one thread at a time (the command's task, or the client's loop thread for watch,
    // which only writes after the command stopped writing).
    private let fd: Int32
    private let onBrokenPipe: @Sendable () -> Void
    private let onWriteFailure: @Sendable (WriteFailure) -> Void
    private var buffer: [UInt8] = []
    private var broken = false

    public init(
        fd: Int32, onBrokenPipe: @escaping @Sendable () -> Void = {},
        onWriteFailure: @escaping @Sendable (WriteFailure) -> Void = { _ in }
    ) {
        self.fd = fd
        self.onBrokenPipe = onBrokenPipe
        self.onWriteFailure = onWriteFailure
    }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Bytes as they are (content that must reach the reader exactly).
    public func write(bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 { flush() }
    }

    public func line(_ text: String) {
        write(text)
        write("\n")
    }

    public func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard !broken, !buffer.isEmpty else { return }
        do {
            try FileDescriptor.writeAll(fd, buffer)
        } catch where error.code == EPIPE {
            broken = true
            onBrokenPipe()
        } catch {
            // A full disk, a file size limit, an I/O error: what follows would be lost too, so the owner decides
            // (memo-client says so and exits 1, so that a cut-off backup never looks complete).
            broken = true
            onWriteFailure(error)
        }
    }

    /// Watches the descriptor on a thread of its own, blocked in poll(2), and calls `onBrokenPipe` once it
    /// reports an error or a hang-up: the reader of a pipe or socket went away, or the terminal closed. For a
    /// long-running writer (watch) that would otherwise notice only at its next write. A file reports neither.
    public func endWhenReaderGoes() {
        let fd = self.fd
        let onBrokenPipe = self.onBrokenPipe
        let thread = Thread {
            // events 0: POLLERR and POLLHUP are reported whatever is asked for, and nothing else is.
            var wanted = pollfd(fd: fd, events: 0, revents: 0)
            while true {
                let ready = poll(&wanted, 1, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if wanted.revents & Int16(POLLERR | POLLHUP) != 0 { break }
                if wanted.revents & Int16(POLLNVAL) != 0 { return }
            }
            onBrokenPipe()
        }
        thread.start()
    }
}
