import Foundation
import MemoCLI
import MemoDiagnostics
import MemoSQLite
import MemoServer
import MemoTLS
import MemoWire

// First, before any OpenSSL call: freed OpenSSL memory is wiped, secrets included (RELIABILITY.md has the cost).
// MEMO_TLS_WIPE_FREED=0 turns it off, for measuring that cost.
let freedMemoryWiped =
    ProcessInfo.processInfo.environment["MEMO_TLS_WIPE_FREED"] != "0" && TLSMemory.wipeFreedMemory()

func fail(_ message: String, code: Int32) -> Never {
    // After the log's lines still waiting, if any (a server that fails after it started logging).
    ServerLog.flushStandardError()
    FileHandle.standardError.write(Data("memo-server: \(message)\n".utf8))
    exit(code)
}


// ServerCommandTable checks the line (unknown commands and options, missing values, choices, options of another
// command); each command then reads its own options' values.
let table = ServerCommandTable.table
do {
    let line = try table.parse(Array(CommandLine.arguments.dropFirst()))
    if let text = try table.answer(line, version: {
        MemoRelease.versionText(
            program: "memo-server", libraries: [("OpenSSL", TLSLibrary.version), ("SQLite", SQLiteLibrary.version)])
    }) {
        showAndExit(text)
    }
    var arguments = line.arguments
    switch line.commandName {
    case "serve":
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
    case "certs init": try Certs.initialize(&arguments)
    case "certs client": try Certs.client(&arguments)
    case "certs server": try Certs.server(&arguments)
    case "certs revoke": try Certs.revoke(&arguments)
    case "certs list": try Certs.list(&arguments)
    case "completion":
        let shell = try arguments.required("a shell: bash, zsh or fish")
        try arguments.finish()
        guard CommandTable.completionShells.contains(shell) else {
            throw UsageError("completion takes bash, zsh or fish, not '\(shell)'")
        }
        showAndExit(table.completionScript(shell: shell))
    case "help":
        let topic = arguments.positional()
        let reference = arguments.flag("--reference")
        try arguments.finish()
        if reference {
            if let topic { throw UsageError("help --reference takes no COMMAND, not '\(topic)'") }
            showAndExit(table.reference)
        }
        guard let text = table.helpText(for: topic) else {
            throw UsageError("no help for '\(topic ?? "")': it is not a command")
        }
        showAndExit(text)
    default:
        // The table and this switch name the same commands.
        throw UsageError("unknown command '\(line.commandName)'")
    }
} catch let error as UsageError {
    fail("\(error)\nTry 'memo-server --help'.", code: 2)
} catch {
    fail("\(error)", code: 1)
}
