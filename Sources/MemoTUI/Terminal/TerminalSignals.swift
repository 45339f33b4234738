import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Watches the signals the front end cares about: SIGWINCH (redraw at the new size) and SIGTERM, SIGINT, SIGHUP
/// (restore the terminal, then exit with 128 + the signal, as a shell expects).
///
/// Dispatch signal sources run their handlers on a queue, outside the signal context, so restoring the terminal
/// there may take locks and allocate, which a raw signal handler may not.
final class TerminalSignals {
    private let sources: [any DispatchSourceSignal]
    private static let queue = DispatchQueue(label: "memo.tui.signals")

    /// - Parameter beforeExit: runs after the terminal is restored, before a terminating signal exits.
    init(
        terminal: Terminal, beforeExit: (@Sendable () -> Void)? = nil, onResize: @escaping @Sendable () -> Void
    ) {
        var sources: [any DispatchSourceSignal] = []
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: Self.queue)
        resize.setEventHandler(handler: onResize)
        sources.append(resize)
        for signalNumber in [SIGTERM, SIGINT, SIGHUP] {
            // The default action would kill the process before the source ran; ignoring it lets the source see it.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: Self.queue)
            source.setEventHandler {
                // Ctrl-C at the editor's cooked terminal reaches the whole group: it is the editor's to handle.
                if signalNumber == SIGINT, ExternalEditor.isRunning { return }
                terminal.leave()
                ExternalEditor.removeLeftovers()
                beforeExit?()
                exit(128 + signalNumber)
            }
            sources.append(source)
        }
        self.sources = sources
        sources.forEach { $0.resume() }
    }

    /// Stops watching and gives the signals their default actions back.
    func cancel() {
        sources.forEach { $0.cancel() }
        for signalNumber in [SIGTERM, SIGINT, SIGHUP] { signal(signalNumber, SIG_DFL) }
    }
}
