import Foundation
import MemoCore
import MemoViewModels
import Synchronization

/// The terminal front end of `memo-client`: one call sets up the terminal, runs the scenes until the user quits,
/// and restores the terminal on every way out (quit, Ctrl-C, SIGTERM/SIGINT/SIGHUP, a thrown error).
public enum TerminalApp {
    private enum Event: Sendable {
        case key(Key)
        case resize
        case redraw
        /// View-model work a store handed over (`FrontEndExecutor`): run here, between keys.
        case run(@Sendable () -> Void)
    }

    /// Runs the list, detail and compose scenes over `storage` until the user quits.
    /// - Parameters:
    ///   - storage: any store: memory, SQLite or the remote client's.
    ///   - status: what the status bar shows about the connection (`ConstantStatus()` for a local store).
    ///   - options: colours, date locale, ESC timeout, editor; `TerminalOptions.fromEnvironment()` by default.
    /// - Throws: `TerminalError` when standard input/output is not a terminal or cannot be set up.
    public static func run(
        storage: any MemoStorage, status: any StatusSource, options: TerminalOptions = .fromEnvironment()
    ) async throws {
        let terminal = try Terminal()
        try terminal.enter()
        defer { terminal.leave() }

        let (events, continuation) = AsyncStream<Event>.makeStream()
        // Keys read but not yet taken from the stream: while one waits, the key in hand is superseded (the list's
        // filter stops searching for it, and no frame is drawn for it).
        let keysWaiting = Atomic<Int>(0)
        let signals = TerminalSignals(terminal: terminal, beforeExit: options.onSignalExit) {
            continuation.yield(.resize)
        }
        defer { signals.cancel() }
        let reader = try InputReader(fd: terminal.input, escapeTimeout: options.escapeTimeoutMilliseconds) { key in
            keysWaiting.add(1, ordering: .relaxed)
            continuation.yield(.key(key))
        }
        reader.start()
        defer { reader.stop() }

        let coordinator = SceneCoordinator(
            storage: storage, dateFormat: options.dateFormat, strings: options.strings,
            inputWaiting: { keysWaiting.load(ordering: .relaxed) > 0 },
            executor: FrontEndExecutor { work in continuation.yield(.run(work)) })
        defer { coordinator.stop() }
        // Redraw when the scene on screen changes its state, when the stack or the connection changes.
        let sceneWatch = Mutex<Subscription?>(nil)
        var subscriptions: [Subscription] = []
        subscriptions.append(coordinator.stack.subscribe { _ in
            let next = coordinator.currentModel.map { model -> Subscription in
                switch model {
                case .list(let list): return list.state.subscribe { _ in continuation.yield(.redraw) }
                case .detail(let detail): return detail.state.subscribe { _ in continuation.yield(.redraw) }
                case .compose(let compose): return compose.state.subscribe { _ in continuation.yield(.redraw) }
                }
            }
            sceneWatch.withLock { watch in
                watch?.cancel()
                watch = next
            }
            continuation.yield(.redraw)
        })
        subscriptions.append(status.status.subscribe { _ in continuation.yield(.redraw) })
        subscriptions.append(status.refusals.subscribe { refusal in coordinator.refused(refusal) })
        subscriptions.append(coordinator.clipboard.subscribe { text in
            terminal.write(Terminal.clipboardSequence(for: text))
        })
        defer {
            subscriptions.forEach { $0.cancel() }
            sceneWatch.withLock { $0?.cancel() }
        }
        coordinator.start()
        options.onReady?()

        var renderer = Renderer(colorEnabled: options.colorEnabled)
        var size = terminal.size()
        func draw() {
            // A filter keystroke that gave way to a newer one is finished before it is drawn.
            if case .list(let list)? = coordinator.currentModel { list.settleFilter() }
            let grid = SceneView.render(
                coordinator.currentModel, status: status.status.value ?? .local, width: size.width,
                height: size.height)
            terminal.write(renderer.render(grid))
        }
        draw()
        for await event in events {
            switch event {
            case .key(.control("c")):
                return
            case .key(let key):
                keysWaiting.subtract(1, ordering: .relaxed)
                let command = await SceneView.handle(
                    key, model: coordinator.currentModel, status: status.status.value ?? .local, width: size.width,
                    height: size.height)
                switch command {
                case .none: break
                case .quit: return
                case .externalEditor(let compose):
                    let text = compose.current.buffer.text
                    do {
                        compose.replaceText(try ExternalEditor.edit(
                            text, command: options.editorCommand, terminal: terminal, reader: reader))
                    } catch {
                        // The text is still in the editor here; only the hand-off failed.
                        compose.show(message: ExternalEditor.describe(
                            error, command: options.editorCommand, strings: compose.strings))
                    }
                    // The editor may have left anything on the screen, at any size: draw everything again.
                    size = terminal.size()
                    renderer.invalidate()
                }
            case .resize:
                size = terminal.size()
                renderer.invalidate()
            case .redraw:
                break
            case .run(let work):
                // The state it changes asks for its own redraw.
                work()
                continue
            }
            if coordinator.quitRequested.value == true { return }
            if keysWaiting.load(ordering: .relaxed) > 0 { continue }
            draw()
        }
    }
}
