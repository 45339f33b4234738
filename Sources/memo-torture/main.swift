import Foundation
import MemoCLI

let usage = """
    usage: memo-torture MODE [options]

    Modes:
      crash    writers and watchers against a server killed with SIGKILL and restarted, then every
               acknowledged write and every watched change is checked
      hostile  a catalog of hostile peers against one live server while a good client keeps working
      gray     gray failures (SIGSTOP of a server, PostgreSQL or one backend, network partitions, a full disk, a
               server behind the history) during a write storm with watchers, each party in a network
               namespace of its own (needs root); the same invariants checked after each fault

    memo-torture MODE --help describes a mode's options. Exit status: 0 all checks passed, 1 a check failed
    or the harness could not run, 2 a usage error.
    """

var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let mode = arguments.positional()
let wantsHelp = arguments.flag("--help", "-h")
do {
    switch mode {
    case "crash":
        if wantsHelp {
            print(CrashTorture.help)
            exit(0)
        }
        exit(try CrashTorture(&arguments).run() ? 0 : 1)
    case "hostile":
        if wantsHelp {
            print(HostileTorture.help)
            exit(0)
        }
        exit(try HostileTorture(&arguments).run() ? 0 : 1)
    case "gray":
        if wantsHelp {
            print(GrayTorture.help)
            exit(0)
        }
        exit(try GrayTorture(&arguments).run() ? 0 : 1)
    case nil where wantsHelp:
        print(usage)
    default:
        throw UsageError(mode.map { "unknown mode '\($0)'" } ?? "missing mode")
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data("memo-torture: \(error)\n\(usage)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("memo-torture: \(error)\n".utf8))
    exit(1)
}
