import Foundation
import MemoViewModels
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reads the terminal on a thread of its own and hands decoded keys to a callback.
///
/// It waits with poll(2) on the terminal and on a wake-up pipe, so that it can be paused (while $EDITOR owns the
/// terminal) and stopped without a byte being stolen. When the decoder holds a possible lone ESC, poll waits only
/// `escapeTimeout` milliseconds; if nothing follows, the decoder is flushed and the ESC becomes an Escape key.
final class InputReader: Sendable {
    private struct State {
        var paused = false
        var stopped = false
    }

    private let fd: Int32
    private let escapeTimeout: Int32
    private let wake: (read: Int32, write: Int32)
    private let state = Mutex(State())
    private let onKey: @Sendable (Key) -> Void

    init(fd: Int32, escapeTimeout: Int32, onKey: @escaping @Sendable (Key) -> Void) throws(TerminalError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .system("pipe", errno) }
        self.fd = fd
        self.escapeTimeout = escapeTimeout
        wake = (fds[0], fds[1])
        self.onKey = onKey
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "memo.tui.input"
        thread.start()
    }

    /// Stops reading the terminal; once this returns no read is in progress nor will start until `resume()`.
    func pause() {
        state.withLock { $0.paused = true }
        poke()
    }

    func resume() {
        state.withLock { $0.paused = false }
        poke()
    }

    func stop() {
        state.withLock { $0.stopped = true }
        poke()
    }

    private func poke() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private func run() {
        var decoder = KeyDecoder()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let paused = state.withLock { $0.stopped ? nil : $0.paused }
            guard let paused else { return }
            var fds = [
                pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
                pollfd(fd: paused ? -1 : fd, events: Int16(POLLIN), revents: 0),
            ]
            let timeout: Int32 = decoder.hasPending && !decoder.isInPaste ? escapeTimeout : -1
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 {
                decoder.flush().forEach(onKey)
                continue
            }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = read(wake.read, &drain, drain.count)
            }
            guard fds[1].revents != 0 else { continue }
            // Read under the lock: a pause that returned has seen this read finish, and no later one starts.
            let count = state.withLock { state -> Int in
                if state.paused || state.stopped { return 0 }
                return buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 {
                if count == 0, !state.withLock({ $0.paused || $0.stopped }) {
                    // End of input: the terminal went away; quit as Ctrl-C would.
                    onKey(.control("c"))
                    return
                }
                continue
            }
            decoder.feed(buffer[..<count]).forEach(onKey)
        }
    }
}
