import Foundation
import MemoCLI
import MemoSQLite
import MemoTLS
import MemoWire

// BenchCommandTable checks the line (unknown modes and options, missing values, choices, options of another
// mode) and prints the help; each mode then reads its own options' values.
let table = BenchCommandTable.table


do {
    let line = try table.parse(Array(CommandLine.arguments.dropFirst()))
    if line.flag("--help-requests") { showAndExit(BenchCommandTable.requestsHelp) }
    if let text = try table.answer(line, version: {
        MemoRelease.versionText(
            program: "memo-bench", libraries: [("OpenSSL", TLSLibrary.version), ("SQLite", SQLiteLibrary.version)])
    }) {
        // The whole help ends with the requests' (what memo-bench does with no mode).
        showAndExit(line.wantsHelp && line.helpTopic == nil ? text + "\n" + BenchCommandTable.requestsHelp : text)
    }
    var arguments = line.arguments
    switch line.commandName {
    case "store": try await StoreBench(&arguments).run()
    case "connections": try ConnectionsBench(&arguments).run()
    case "handshakes": try HandshakesBench(&arguments).run()
    case "fanout": try FanoutBench(&arguments).run()
    case "redis-fanout": try RedisBench.fanout(&arguments)
    case "redis-connections": try RedisBench.connections(&arguments)
    case "client": try await ClientScaleBench(&arguments).run()
    case "keystroke": try KeystrokeBench(&arguments).run()
    case "snapshot": try await SnapshotBench(&arguments).run()
    case "large": try await LargeStoreBench(&arguments).run()
    case "": try RequestBench(&arguments).run()
    default:
        // The table and this switch name the same modes.
        throw UsageError("unknown mode '\(line.commandName)'")
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data("memo-bench: \(error)\nTry 'memo-bench --help'.\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("memo-bench: \(error)\n".utf8))
    exit(1)
}
