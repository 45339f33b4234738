import Foundation
import MemoModel
/// A pipe that wakes a thread sleeping in `poll`, alone or beside another descriptor (a libpq socket).
final class WakePipe: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    init() throws(MemoError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw .storage("cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        readEnd = fds[0]
        writeEnd = fds[1]
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes the waiting thread (or its next wait); never blocks.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Sleeps until signalled, `other` is readable, or the timeout passes; empties the pipe.
    func wait(alsoOn other: Int32?, timeoutMillis: Int) {
        var fds = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        if let other, other >= 0 { fds.append(pollfd(fd: other, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&fds, nfds_t(fds.count), Int32(timeoutMillis))
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}
