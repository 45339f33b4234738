import Foundation
import MemoModel
import MemoNet
import MemoViewModels

#if canImport(Glibc)
import Glibc
#endif

/// The terminal front end of `memo-client`: one call sets up the terminal, runs the scenes until the user quits
/// or a signal ends them, and restores the terminal on every way out (quit, Ctrl-C, SIGTERM/SIGINT/SIGHUP, a
/// thrown error).
///
/// Everything runs on the front end's one loop (`FrontEnd`): the terminal's input and a signalfd are registered
/// there, the store's deliveries are hopped there, and a key is handled without waiting for the network (a save
/// is a child task of its scene).
public enum TerminalApp {
    /// How the front end ended.
    public enum Ending: Sendable, Hashable {
        /// `q`, Ctrl-C, or the terminal went away.
        case quit
        /// SIGINT, SIGTERM or SIGHUP: the caller saves what a quit saves and exits with 128 + the signal.
        case signal(Int32)
    }

    /// Blocks the signals the front end reads from its signalfd, in this thread and every thread started after.
    /// Call at the very top of `main`, before any thread starts, when the front end will run: a thread that left
    /// them unblocked would take them with their default action (SIGTERM would end the process before the
    /// terminal is restored).
    public static func blockSignals() throws(NetError) {
        try SignalWatcher.block(TerminalSignals.watched)
    }

    /// Runs the list, detail and compose scenes over `storage` until the user quits or a signal ends them.
    /// - Parameters:
    ///   - storage: any store: memory, SQLite or the remote client's.
    ///   - status: what the status bar shows about the connection (`ConstantStatus()` for a local store).
    ///   - options: colours, date locale, ESC timeout, editor, save timeout; `TerminalOptions.fromEnvironment()`.
    ///   - versions: the memos' kept versions and the trash (`h` and `T`); nil for a store that keeps none.
    /// - Returns: how it ended.
    /// - Throws: `TerminalError` when standard input/output is not a terminal or cannot be set up.
    @FrontEnd
    public static func run(
        storage: any MemoStorage, status: any StatusSource, options: TerminalOptions = .fromEnvironment(),
        versions: (any VersionSource)? = nil
    ) async throws -> Ending {
        let terminal = try Terminal()
        try terminal.enter()
        defer { terminal.leave() }
        let app = try FrontEndApp(
            terminal: terminal, storage: storage, status: status, options: options, versions: versions)
        defer { app.close() }
        return await app.run()
    }
}

/// The running front end: its terminal, input, signals, coordinator and renderer, all on the front end's loop.
@FrontEnd
private final class FrontEndApp {
    private enum Event: Sendable {
        case key(Key)
        case signal(Int32)
        case redraw
    }

    private let terminal: Terminal
    private let status: any StatusSource
    private let options: TerminalOptions
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let reader: InputReader
    private var signals: TerminalSignals?
    private let coordinator: SceneCoordinator
    private var subscriptions: [Subscription] = []
    private var sceneWatch: Subscription?
    private var renderer: Renderer
    private var size: (width: Int, height: Int)
    /// Keys read but not yet handled: while one waits, the key in hand is superseded (the list's filter stops
    /// searching for it, and no frame is drawn for it).
    private let keys = KeysWaiting()
    private var keysWaiting: Int {
        get { keys.count }
        set { keys.count = newValue }
    }
    /// A redraw is queued; more changes before it is drawn need no other.
    private var redrawQueued = false
    /// The editor's process while $EDITOR has the terminal: Ctrl-C typed there is the editor's, not ours.
    private var editor: pid_t?
    private var editorRunning = false
    private var ending: TerminalApp.Ending?

    init(
        terminal: Terminal, storage: any MemoStorage, status: any StatusSource, options: TerminalOptions,
        versions: (any VersionSource)?
    ) throws {
        self.terminal = terminal
        self.status = status
        self.options = options
        (events, continuation) = AsyncStream<Event>.makeStream()
        renderer = Renderer(colorEnabled: options.colorEnabled)
        size = terminal.size()
        let continuation = continuation
        let keys = keys
        let reader = InputReader(fd: terminal.input, escapeTimeout: options.escapeTimeoutMilliseconds) { key in
            keys.count += 1
            continuation.yield(.key(key))
        }
        self.reader = reader
        coordinator = SceneCoordinator(
            storage: storage, dateFormat: options.dateFormat, strings: options.strings,
            inputWaiting: { keys.count > 0 || reader.inputWaiting() }, saveTimeout: options.saveTimeout,
            notSaved: status.notSaved, versions: versions)
        try reader.start()
        signals = try TerminalSignals { [weak self] signal in self?.receive(signal: signal) }
        // Redraw when the scene on screen changes its state, when the stack or the connection changes.
        subscriptions.append(coordinator.stack.subscribe { [weak self] _ in
            FrontEnd.assumeIsolated { self?.watchCurrentScene() }
        })
        // The status and the refusals come from the client's loop: the first only asks for a redraw (the bar reads
        // the latest status when it draws), the second is hopped onto the front end's loop.
        subscriptions.append(status.status.subscribe { _ in continuation.yield(.redraw) })
        subscriptions.append(status.refusals.subscribe { [weak self] refusal in
            FrontEnd.hop { self?.coordinator.refused(refusal) }
        })
        subscriptions.append(coordinator.clipboard.subscribe { [weak self] text in
            FrontEnd.assumeIsolated { self?.terminal.write(Terminal.clipboardSequence(for: text)) }
        })
    }

    func close() {
        subscriptions.forEach { $0.cancel() }
        subscriptions = []
        sceneWatch?.cancel()
        sceneWatch = nil
        coordinator.stop()
        reader.stop()
        signals?.cancel()
        signals = nil
        continuation.finish()
    }

    private func watchCurrentScene() {
        let continuation = continuation
        let next = coordinator.currentModel.map { model -> Subscription in
            switch model {
            case .list(let list): return list.state.subscribe { _ in continuation.yield(.redraw) }
            case .detail(let detail): return detail.state.subscribe { _ in continuation.yield(.redraw) }
            case .compose(let compose): return compose.state.subscribe { _ in continuation.yield(.redraw) }
            case .notSaved(let notSaved): return notSaved.state.subscribe { _ in continuation.yield(.redraw) }
            case .history(let history): return history.state.subscribe { _ in continuation.yield(.redraw) }
            case .trash(let trash): return trash.state.subscribe { _ in continuation.yield(.redraw) }
            }
        }
        sceneWatch?.cancel()
        sceneWatch = next
        continuation.yield(.redraw)
    }

    func run() async -> TerminalApp.Ending {
        coordinator.start()
        options.onReady?()
        draw()
        for await event in events {
            switch event {
            case .key(let key):
                keysWaiting -= 1
                await handle(key)
            case .signal(let signal):
                handle(signal: signal)
            case .redraw:
                redrawQueued = false
            }
            if let ending { return ending }
            if coordinator.quitRequested.value == true { return .quit }
            if keysWaiting > 0 { continue }
            draw()
        }
        return ending ?? .quit
    }

    private func draw() {
        guard terminal.active else { return }
        // A filter keystroke that gave way to a newer one is finished before it is drawn.
        if case .list(let list)? = coordinator.currentModel { list.settleFilter() }
        let grid = SceneView.render(
            coordinator.currentModel, status: status.status.value ?? .local, width: size.width, height: size.height)
        terminal.write(renderer.render(grid))
    }

    /// Everything drawn again from a cleared screen (Ctrl-L, a resize, back from the editor or from a suspend).
    private func repaint() {
        size = terminal.size()
        renderer.invalidate()
    }

    private func handle(_ key: Key) async {
        switch key {
        case .control("c"):
            ending = .quit
            return
        case .control("l"):
            repaint()
            return
        case .control("z"):
            suspend()
            return
        default:
            break
        }
        let command = await SceneView.handle(
            key, model: coordinator.currentModel, status: status.status.value ?? .local, width: size.width,
            height: size.height)
        switch command {
        case .none: break
        case .quit: ending = .quit
        case .externalEditor(let compose): await runEditor(for: compose)
        }
    }

    /// A signal, as the signalfd gives it: queued behind the keys, or, while $EDITOR has the terminal, dealt with
    /// at once (the key loop waits for the editor then).
    private func receive(signal: Int32) {
        if editorRunning {
            switch signal {
            case SIGINT, SIGCONT, SIGWINCH:
                // Ctrl-C at the editor's cooked terminal reaches the whole group: it was the editor's to handle.
                // The screen is painted whole when the editor is done.
                return
            case SIGTSTP:
                // Ctrl-Z at the editor's terminal stopped the editor; the job stops with it, terminal untouched.
                kill(getpid(), SIGSTOP)
                return
            default:
                // Ending: the editor goes too (its file is removed when it has gone), then the front end ends.
                if let editor { kill(editor, SIGTERM) }
            }
        }
        continuation.yield(.signal(signal))
    }

    private func handle(signal: Int32) {
        switch signal {
        case SIGWINCH:
            repaint()
        case SIGTSTP:
            suspend()
        case SIGCONT:
            // Back from a stop (ours or anyone's): take the terminal again and paint it whole.
            resumeFromStop()
        default:
            if TerminalSignals.ending.contains(signal) { ending = .signal(signal) }
        }
    }

    /// Ctrl-Z or SIGTSTP: gives the terminal back as it was and stops the process; the shell's `fg` continues it
    /// (SIGCONT) and the screen is painted again.
    private func suspend() {
        reader.pause()
        terminal.leave()
        // SIGTSTP is blocked (it is read from the signalfd), so stop with SIGSTOP, which cannot be blocked; the
        // shell sees the job stopped either way. The stop is the whole process's and may take effect a moment
        // after kill returns, so nothing is done here: the SIGCONT that `fg` sends (read from the signalfd once
        // the process runs again) takes the terminal back.
        kill(getpid(), SIGSTOP)
    }

    private func resumeFromStop() {
        guard !terminal.active else {
            repaint()
            return
        }
        try? terminal.enter()
        reader.resume()
        repaint()
    }

    /// Ctrl-E: the text goes to $EDITOR, which has the terminal until it exits. Keys wait for it (the terminal's
    /// input is the editor's); the loop goes on with the store's deliveries and the signals meanwhile.
    private func runEditor(for compose: ComposeViewModel) async {
        let text = compose.current.buffer.text
        editorRunning = true
        do {
            compose.replaceText(try await ExternalEditor.edit(
                text, command: options.editorCommand, terminal: terminal, reader: reader,
                started: { [weak self] pid in self?.editor = pid }))
        } catch {
            // The text is still in the editor here; only the hand-off failed.
            compose.show(message: ExternalEditor.describe(
                error, command: options.editorCommand, strings: compose.strings))
        }
        editor = nil
        editorRunning = false
        // The editor may have left anything on the screen, at any size: draw everything again.
        repaint()
    }
}

/// How many keys the terminal gave that are not handled yet (shared by the reader, which counts them in, and the
/// key loop, which counts them out).
@FrontEnd
private final class KeysWaiting {
    var count = 0
}
