import Glibc
import Synchronization

/// A file descriptor that is closed exactly once: by `close()` or, failing that, by `deinit`.
///
/// The close races safely with other closes (an atomic exchange), but not with I/O on another thread: whoever
/// reads and writes the descriptor (its event loop) should also be the one to close it.
final class OwnedDescriptor: Sendable {
    private let raw: Atomic<Int32>

    init(_ fd: Int32) {
        raw = Atomic(fd)
    }

    /// The descriptor, or -1 once closed.
    var fd: Int32 {
        raw.load(ordering: .acquiring)
    }

    /// The descriptor, or a `NetError(EBADF)` naming `operation` once closed.
    func require(_ operation: @autoclosure () -> String) throws(NetError) -> Int32 {
        let fd = raw.load(ordering: .acquiring)
        guard fd >= 0 else { throw NetError(errno: EBADF, operation: operation()) }
        return fd
    }

    /// Closes the descriptor if still open.
    /// - Returns: true for the call that closed it.
    @discardableResult
    func close() -> Bool {
        let fd = raw.exchange(-1, ordering: .acquiringAndReleasing)
        guard fd >= 0 else { return false }
        Syscall.close(fd)
        return true
    }

    deinit {
        close()
    }
}
