import MemoNet
import MemoViewModels

#if canImport(Glibc)
import Glibc
#endif

/// The signals the front end handles, read from a signalfd on the front end's own loop: SIGWINCH (redraw at the
/// new size), SIGTSTP (suspend: restore the terminal and stop), SIGCONT (take the terminal back and repaint), and
/// SIGINT, SIGTERM, SIGHUP (end the front end: `TerminalApp.run` returns, the caller saves and exits with 128 +
/// the signal). Nothing runs in a signal handler: the signals are blocked in every thread and read as data.
@FrontEnd
final class TerminalSignals {
    /// Every signal the front end reads.
    nonisolated static let watched: [Int32] = [SIGWINCH, SIGTSTP, SIGCONT, SIGINT, SIGTERM, SIGHUP]
    /// The ones that end it.
    nonisolated static let ending: Set<Int32> = [SIGINT, SIGTERM, SIGHUP]

    private var watcher: SignalWatcher?

    /// Starts reading `watched` on `FrontEnd.loop`; `onSignal` runs there, once per delivery.
    init(onSignal: @escaping @FrontEnd (Int32) -> Void) throws(NetError) {
        watcher = try SignalWatcher(signals: Self.watched, eventLoop: FrontEnd.loop) { signal in
            FrontEnd.assumeIsolated { onSignal(signal) }
        }
    }

    /// Stops reading; the signals stay blocked, so one that comes after is left pending, not acted on.
    func cancel() {
        watcher?.stop()
        watcher = nil
    }
}
