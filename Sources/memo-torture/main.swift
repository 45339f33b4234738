import Foundation
import MemoCLI
import MemoSQLite
import MemoTLS
import MemoWire

// TortureCommandTable checks the line (unknown modes and options, missing values, options of another mode) and
// prints the help; each mode then reads its own options' values.
let table = TortureCommandTable.table


do {
    let line = try table.parse(Array(CommandLine.arguments.dropFirst()))
    if let text = try table.answer(line, version: {
        MemoRelease.versionText(
            program: "memo-torture", libraries: [("OpenSSL", TLSLibrary.version), ("SQLite", SQLiteLibrary.version)])
    }) {
        showAndExit(text)
    }
    var arguments = line.arguments
    switch line.commandName {
    case "crash": exit(try CrashTorture(&arguments).run() ? 0 : 1)
    case "hostile": exit(try HostileTorture(&arguments).run() ? 0 : 1)
    case "gray": exit(try GrayTorture(&arguments).run() ? 0 : 1)
    case "": throw UsageError("missing mode: " + table.visibleCommands.map(\.name).joined(separator: ", "))
    default:
        // The table and this switch name the same modes.
        throw UsageError("unknown mode '\(line.commandName)'")
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data("memo-torture: \(error)\nTry 'memo-torture --help'.\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("memo-torture: \(error)\n".utf8))
    exit(1)
}
