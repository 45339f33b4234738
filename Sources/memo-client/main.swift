import Foundation
import MemoCLI
import MemoClient
import MemoClientCLI
import MemoNet
import MemoSQLite
import MemoTLS
import MemoWire

// memo-client: reads the command line (Invocation.parse), then runs it: CommandRunner, the front end, help.

func fail(usage error: UsageError) -> Never {
    FileHandle.standardError.write(Data("memo-client: \(error.message)\nTry 'memo-client --help'.\n".utf8))
    exit(ExitCode.usage.rawValue)
}

/// Runs the command line and returns the exit code. (A function rather than top-level code: the release
/// compiler of Swift 6.3 crashes on a `guard let` of a tuple element in an async top-level `main`.)
func runMain() async -> Int32 {
    let argv = Array(CommandLine.arguments.dropFirst())
    let invocation: Invocation
    do {
        invocation = try Invocation.parse(argv, environment: ProcessInfo.processInfo.environment)
    } catch {
        fail(usage: error)
    }
    switch invocation {
    case .help(let command):
        guard let text = HelpTopics.text(for: command) else {
            fail(usage: UsageError("no help for '\(command ?? "")': it is not a command"))
        }
        print(text, terminator: "")
        return 0
    case .version:
        print(MemoRelease.versionText(
            program: "memo-client",
            libraries: [("OpenSSL", TLSLibrary.version), ("SQLite", SQLiteLibrary.version)]), terminator: "")
        return 0
    case .completion(let shell):
        print(Completion.script(shell: shell), terminator: "")
        return 0
    case .completionIDs(let server):
        for id in Completion.cachedIDs(server: server) { print(id) }
        return 0
    case .run(let configuration, let command, let json, let locale):
        guard let command else {
            if isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 {
                return await runFrontEnd(configuration: configuration, locale: locale)
            }
            fail(usage: UsageError("no command given (and not on a terminal)"))
        }
        // A reader that went away (`memo-client list | head -1`) ends the program quietly with 0, as `head` expects.
        let out = BufferedOutput(fd: STDOUT_FILENO, onBrokenPipe: { exit(0) })
        let err = BufferedOutput(fd: STDERR_FILENO, onBrokenPipe: { exit(0) })
        let style = OutputStyle.detect(json: json)
        let runner = CommandRunner(configuration: configuration, style: style, out: out, err: err)
        return await runner.run(command).rawValue
    }
}

exit(await runMain())
