internal import CMemoLinux
import Glibc

/// Delivers signals such as SIGTERM and SIGINT to a closure on an event loop's thread, through a `signalfd`.
///
/// A signalfd only sees signals that are blocked: a signal that some thread leaves unblocked is delivered to
/// that thread's default action instead (for SIGTERM: the process dies). So:
///
/// 1. Call `SignalWatcher.block([SIGTERM, SIGINT])` at the very top of `main`, before any thread is started
///    (event loops, Dispatch, Foundation). Threads inherit the mask of the thread that creates them.
/// 2. Later, create the watcher on an event loop's thread.
///
/// Touched only on its loop's thread.
public final class SignalWatcher: EventHandler {
    /// The loop that reads the signalfd.
    public let eventLoop: EventLoop
    /// The signals watched.
    public let signals: [Int32]
    private let descriptor: OwnedDescriptor
    private let handler: (Int32) -> Void
    private var registration: Registration?

    /// Blocks `signals` in the calling thread and in every thread it starts afterwards.
    /// - Throws: `NetError` from `pthread_sigmask`.
    public static func block(_ signals: [Int32]) throws(NetError) {
        var set = SignalWatcher.signalSet(signals)
        let status = pthread_sigmask(SIG_BLOCK, &set, nil)
        if status != 0 { throw NetError(errno: status, operation: "pthread_sigmask") }
    }

    /// Starts watching `signals` on `eventLoop`. Call on the loop's thread.
    ///
    /// Blocks the signals on the loop's thread as well, so a signal sent to that thread (`raise` in work on the
    /// loop, `pthread_kill`) is read here even if `block` was called late; process-wide delivery still needs
    /// `block` early in `main`.
    /// - Parameters:
    ///   - handler: Called on the loop's thread with each signal number, once per delivery (standard signals
    ///     that arrive while one is pending coalesce, as with any signal handler).
    /// - Throws: `NetError` from `pthread_sigmask`, `signalfd` or the registration.
    public init(signals: [Int32], eventLoop: EventLoop, handler: @escaping (Int32) -> Void) throws(NetError) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.signals = signals
        self.handler = handler
        try SignalWatcher.block(signals)
        var set = SignalWatcher.signalSet(signals)
        let fd = try Syscall.call("signalfd") { signalfd(-1, &set, LinuxAPI.signalFDFlags) }
        descriptor = OwnedDescriptor(fd)
        registration = try eventLoop.register(fileDescriptor: fd, interest: .readable, handler: self)
    }

    public func readable() {
        var record = signalfd_siginfo()
        while registration != nil, descriptor.fd >= 0 {
            let fd = descriptor.fd
            let result = withUnsafeMutableBytes(of: &record) { raw in
                try? Syscall.nonBlocking("read(signalfd)") { Glibc.read(fd, raw.baseAddress, raw.count) }
            }
            guard case .done(let count)? = result, count == MemoryLayout<signalfd_siginfo>.size else { return }
            handler(Int32(record.ssi_signo))
        }
    }

    public func hangup() {
        stop()
    }

    /// Stops watching and closes the signalfd; the signals stay blocked. Call on the loop's thread.
    public func stop() {
        if let registration {
            eventLoop.deregister(registration)
            self.registration = nil
        }
        descriptor.close()
    }

    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }
}
