import Foundation
import MemoCLI
import MemoClient
import MemoClientCLI
import MemoNet
import MemoSystem
import MemoTLS
import MemoTUI
import MemoWire

// memo-client: reads the command line (Invocation.parse), then runs it: CommandRunner, the front end, help.

func fail(usage error: UsageError) -> Never {
    FileHandle.standardError.write(Data("memo-client: \(error.message)\nTry 'memo-client --help'.\n".utf8))
    exit(ExitCode.usage.rawValue)
}

// A file size limit (`ulimit -f`) must make write(2) fail with EFBIG, which is reported, rather than kill the
// process with SIGXFSZ before it can say so.
signal(SIGXFSZ, SIG_IGN)

/// Standard output for every command. A reader that went away (`memo-client list | head -1`) ends the program
/// quietly with 0, as `head` expects; any other failed write (a full disk, a file size limit) ends it with one
/// line on stderr and exit 1, so that a cut-off `export > backup` never looks complete.
let standardOutput = BufferedOutput(
    fd: STDOUT_FILENO, onBrokenPipe: { exit(0) },
    onWriteFailure: { failure in
        FileHandle.standardError.write(Data("memo-client: cannot write to standard output: \(failure.reason)\n".utf8))
        exit(ExitCode.failure.rawValue)
    })

/// Prints `text` whole on standard output, checked, and returns 0.
func printChecked(_ text: String) -> Int32 {
    standardOutput.write(text)
    standardOutput.flush()
    return 0
}

/// The process's environment, read once: `ProcessInfo.environment` builds a new dictionary on every call (about
/// 0.4 million instructions for 130 variables), and the command line, the output style and the runner each read it.
/// Read on first use, not at start: `--version` and `--help` never need it, and building it (the runtime's first
/// lookup of `String: Hashable` for the dictionary's type, a walk of every conformance record of the static binary)
/// was 0.78 million of `--version`'s 5.87 million instructions (callgrind).
enum ProcessEnvironment {
    static let values = ProcessInfo.processInfo.environment
}

/// Reads the command line (before any thread starts); a usage error or arguments that are not UTF-8 end the
/// program here.
func parseCommandLine() -> Invocation {
    // The arguments' own bytes: CommandLine.arguments would have replaced invalid UTF-8 with U+FFFD, storing
    // what was never typed. They are refused as standard input's bytes are.
    let argv: [String]
    switch Invocation.arguments(CommandLine.unsafeArgv, count: Int(CommandLine.argc)) {
    case .success(let valid): argv = valid
    case .failure(let error):
        FileHandle.standardError.write(Data("memo-client: \(ExitCode.message(for: error))\n".utf8))
        exit(ExitCode.failure.rawValue)
    }
    let invocation: Invocation
    do {
        invocation = try Invocation.parse(argv, environment: ProcessEnvironment.values)
    } catch {
        fail(usage: error)
    }
    return invocation
}

/// True when the invocation opens the terminal front end (no command, on a terminal).
func opensFrontEnd(_ invocation: Invocation) -> Bool {
    guard case .run(_, nil, _, _, _, _) = invocation else { return false }
    return isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
}

/// Answers what needs no connection (help, the reference, the version, completion) and returns the exit code;
/// nil for a command to run. Called on the main thread before any task starts: these answers then cost no
/// Dispatch threads and no concurrency runtime, which is most of what `memo-client --version` would otherwise
/// spend after the process has loaded (BENCHMARKS.md, "A script's command").
func answerWithoutConnecting(_ invocation: Invocation) -> Int32? {
    switch invocation {
    case .help(let command):
        guard let text = ClientCommandTable.table.helpText(for: command) else {
            fail(usage: ClientCommandTable.table.noHelp(for: command ?? ""))
        }
        return printChecked(text)
    case .reference:
        return printChecked(ClientCommandTable.table.reference)
    case .version:
        return printChecked(MemoRelease.versionText(
            program: "memo-client",
            // No SQLite line: the client keeps no database, and linking SQLite only to name its version would not
            // be worth it.
            libraries: [("OpenSSL", TLSLibrary.version)]))
    case .completion(let shell):
        return printChecked(ClientCommandTable.table.completionScript(shell: shell))
    case .completionIDs(let server):
        return printChecked(Completion.cachedIDs(server: server).map { $0 + "\n" }.joined())
    case .run:
        return nil
    }
}

/// True for the commands a script runs once per memo (add, show, edit, rm): one request after the connection,
/// nothing read while it is in flight. Their task and their connection's event loop share the main thread
/// (LoopExecutor), which starts no other thread. The others keep the global executor and a loop thread: `import`
/// reads its lines with blocking reads while its creates are in flight, which one thread would serialise (each
/// line's create would wait for the next line), and `watch` and `status` run tasks side by side.
func runsOnTheMainThread(_ invocation: Invocation) -> Bool {
    guard case .run(_, let command?, _, _, _, _) = invocation else { return false }
    switch command {
    case .add, .show, .edit, .remove: return true
    default: return false
    }
}

/// Runs a command (or the front end) and returns the exit code; `loop`: the loop a one-request command's connection
/// runs on (nil: its own loop thread).
func runMain(_ invocation: Invocation, loop: EventLoop? = nil) async -> Int32 {
    guard case .run(let configuration, let command, let json, let locale, let quiet, let output) = invocation else {
        return answerWithoutConnecting(invocation) ?? ExitCode.failure.rawValue
    }
    guard let command else {
        if opensFrontEnd(invocation) {
            return await runFrontEnd(configuration: configuration, locale: locale)
        }
        fail(usage: UsageError("no command given (and not on a terminal)"))
    }
    let err = BufferedOutput(fd: STDERR_FILENO, onBrokenPipe: { exit(0) })
    let environment = ProcessEnvironment.values
    let style = OutputStyle.detect(json: json, format: output, environment: environment)
    var runner = CommandRunner(
        configuration: configuration, style: style, out: standardOutput, err: err, environment: environment)
    runner.quiet = quiet
    runner.progress = isatty(STDERR_FILENO) == 1
    runner.stopsOnInterrupt = true
    runner.loop = loop
    return await runner.run(command).rawValue
}

// Top-level code without `await`, so that it runs on the process's main thread: an async top-level `main` would
// run on a Dispatch thread while the main thread waits in sigsuspend with every signal unblocked, and a signal the
// front end means to read from its signalfd would take its default action there instead.
let invocation = parseCommandLine()
if let code = answerWithoutConnecting(invocation) { exit(code) }
// A command: its exit need not free OpenSSL's state (TLSLibrary.initialiseWithoutCleanupAtExit).
TLSLibrary.initialiseWithoutCleanupAtExit()
let frontEnd = opensFrontEnd(invocation)
if frontEnd {
    // Here, before any other thread starts: the front end reads these signals from a signalfd on its loop, which
    // sees only signals that every thread blocks (threads inherit the mask; the main thread keeps it while parked).
    do {
        try TerminalApp.blockSignals()
    } catch {
        FileHandle.standardError.write(Data("memo-client: \(error)\n".utf8))
        exit(ExitCode.failure.rawValue)
    }
}
if runsOnTheMainThread(invocation) {
    // The command's task and its connection's event loop run on this thread, which the task's `exit` ends. The
    // commands keep the signals' default actions: the main thread takes them with an empty mask, whatever mask
    // the process was started with, as dispatchMain() would have.
    var none = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, nil)
    let loop: EventLoop
    do {
        loop = try EventLoop.forCallingThread(name: "memo-client")
    } catch {
        FileHandle.standardError.write(Data("memo-client: \(error)\n".utf8))
        exit(ExitCode.failure.rawValue)
    }
    Task.detached(executorPreference: LoopExecutor(loop: loop)) {
        exit(await runMain(invocation, loop: loop))
    }
    loop.runOnCallingThread()
    exit(ExitCode.failure.rawValue)
}
Task.detached {
    exit(await runMain(invocation))
}
if frontEnd {
    // Parked with the mask above until the task exits the process. (Not dispatchMain(): it waits in sigsuspend with
    // an empty mask, where the signals would take their default action. Nothing in memo-client runs on the main
    // queue or the main actor.)
    DispatchSemaphore(value: 0).wait()
} else {
    // The commands keep the signals' default actions (SIGTERM ends `watch`): the main thread waits in
    // sigsuspend with an empty mask, whatever mask the process was started with.
    dispatchMain()
}
