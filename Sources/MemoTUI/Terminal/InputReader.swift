import MemoNet
import MemoViewModels

#if canImport(Glibc)
import Glibc
#endif

/// Reads the terminal on the front end's own loop and hands decoded keys to a callback, in the order typed.
///
/// The terminal's descriptor is registered with `FrontEnd.loop` (epoll, level-triggered): each wake-up reads what
/// is there once, so keys, signals and the store's deliveries take turns. When the decoder holds a possible lone
/// ESC, a loop timer of `escapeTimeout` milliseconds flushes it as the Escape key unless more bytes come first.
/// `pause()` takes the descriptor out of the loop (while $EDITOR owns the terminal), so no byte is stolen.
@FrontEnd
final class InputReader {
    private let fd: Int32
    private let escapeTimeout: Int32
    private let onKey: @FrontEnd (Key) -> Void
    private var decoder = KeyDecoder()
    private var registration: Registration?
    private var escapeTimer: TimerHandle?
    private var ended = false
    private lazy var handler = LoopReadable { [weak self] in
        FrontEnd.assumeIsolated { self?.readAvailable() }
    }

    init(fd: Int32, escapeTimeout: Int32, onKey: @escaping @FrontEnd (Key) -> Void) {
        self.fd = fd
        self.escapeTimeout = escapeTimeout
        self.onKey = onKey
    }

    /// Starts (or resumes) reading.
    func start() throws(NetError) {
        guard registration == nil, !ended else { return }
        registration = try FrontEnd.loop.register(fileDescriptor: fd, interest: .readable, handler: handler)
    }

    /// Stops reading until `resume()`: the bytes typed meanwhile stay in the terminal for whoever reads it.
    func pause() {
        escapeTimer?.cancel()
        escapeTimer = nil
        if let registration { FrontEnd.loop.deregister(registration) }
        registration = nil
    }

    func resume() {
        try? start()
    }

    func stop() { pause() }

    /// Whether the terminal has bytes not yet read (a key typed while the front end was busy): a keystroke being
    /// worked on is then superseded. One poll(2) with no wait.
    func inputWaiting() -> Bool {
        guard registration != nil else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLIN) != 0
    }

    private func readAvailable() {
        guard registration != nil else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return }
        }
        if count <= 0 {
            // End of input (or an error): the terminal went away; quit as Ctrl-C would.
            ended = true
            pause()
            onKey(.control("c"))
            return
        }
        escapeTimer?.cancel()
        escapeTimer = nil
        for key in decoder.feed(buffer[..<count]) { onKey(key) }
        if decoder.hasPending && !decoder.isInPaste {
            escapeTimer = FrontEnd.loop.schedule(after: .milliseconds(Int(escapeTimeout))) { [weak self] in
                FrontEnd.assumeIsolated { self?.flushEscape() }
            }
        }
    }

    private func flushEscape() {
        escapeTimer = nil
        for key in decoder.flush() { onKey(key) }
    }
}

/// An epoll handler that calls a closure on the loop's thread: the bridge from MemoNet's `EventHandler` to
/// front-end code (the closure enters the actor with `FrontEnd.assumeIsolated`).
final class LoopReadable: EventHandler {
    private let onReadable: @Sendable () -> Void

    init(_ onReadable: @escaping @Sendable () -> Void) {
        self.onReadable = onReadable
    }

    func readable() { onReadable() }
    func hangup() { onReadable() }
}
