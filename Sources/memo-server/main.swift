import Foundation
import MemoCLI
import MemoCore
import MemoServer
import MemoSQLite
import MemoTLS
import MemoWire

// First, before any OpenSSL call: freed OpenSSL memory is wiped, secrets included (RELIABILITY.md has the cost).
// MEMO_TLS_WIPE_FREED=0 turns it off, for measuring that cost.
let freedMemoryWiped =
    ProcessInfo.processInfo.environment["MEMO_TLS_WIPE_FREED"] != "0" && TLSMemory.wipeFreedMemory()

var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let wantsHelp = arguments.flag("--help", "-h")
if arguments.flag("--version") {
    print(MemoRelease.versionText(
        program: "memo-server", libraries: [("OpenSSL", TLSLibrary.version), ("SQLite", SQLiteLibrary.version)]),
        terminator: "")
    exit(0)
}
let command = arguments.command()

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("memo-server: \(message)\n".utf8))
    exit(code)
}

do {
    switch command {
    case nil, "serve":
        if wantsHelp { print(command == nil ? Help.main + "\n\n" + Help.serve : Help.serve); exit(0) }
        var serve = try Serve(&arguments)
        serve.freedMemoryWiped = freedMemoryWiped
        do {
            try serve.run()
        } catch {
            // A server that cannot start says why in its log's own format, so that a JSON log stays JSON.
            guard serve.logFormat == .json else { throw error }
            serve.log(LogRecord(.error, "fatal", [("reason", "\(error)")], text: "memo-server: \(error)"))
            exit(1)
        }
    case "certs":
        let sub = arguments.command()
        switch sub {
        case "init":
            if wantsHelp { print(Help.certsInit); exit(0) }
            try Certs.initialize(&arguments)
        case "client":
            if wantsHelp { print(Help.certsClient); exit(0) }
            try Certs.client(&arguments)
        case "server":
            if wantsHelp { print(Help.certsServer); exit(0) }
            try Certs.server(&arguments)
        case "revoke":
            if wantsHelp { print(Help.certsRevoke); exit(0) }
            try Certs.revoke(&arguments)
        case "list":
            if wantsHelp { print(Help.certsList); exit(0) }
            try Certs.list(&arguments)
        default:
            if wantsHelp { print(Help.certs); exit(0) }
            throw UsageError(
                sub.map { "unknown certs command '\($0)'" }
                    ?? "certs needs a command: init, client, server, revoke or list")
        }
    case "help":
        print(Help.main)
    default:
        throw UsageError("unknown command '\(command!)'")
    }
} catch let error as UsageError {
    fail("\(error)\nTry 'memo-server --help'.", code: 2)
} catch {
    fail("\(error)", code: 1)
}
