import Foundation
import MemoCLI
import MemoClient

// memo-client: parses the command line, then hands the command to MemoClient's CommandRunner.

func fail(usage error: UsageError) -> Never {
    FileHandle.standardError.write(Data("memo-client: \(error.message)\nTry 'memo-client --help'.\n".utf8))
    exit(ExitCode.usage.rawValue)
}

/// Everything the command line says, read in one go (options first: the reader takes positionals last).
func parse(_ argv: [String], environment: [String: String]) throws(UsageError) -> (
    ClientConfiguration, ClientCommand?, json: Bool, locale: String?
) {
    var arguments = Arguments(argv)
    let json = arguments.flag("--json")
    let server = try arguments.option("--server") ?? environment["MEMO_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
        ?? "127.0.0.1:7420"
    let certs = try arguments.option("--certs") ?? environment["MEMO_CERTS"].flatMap { $0.isEmpty ? nil : $0 }
        ?? "certs"
    let ca = try arguments.option("--ca")
    let cert = try arguments.option("--cert")
    let key = try arguments.option("--key")
    let timeout = try arguments.seconds("--timeout") ?? 10
    let filter = try arguments.option("--filter")
    let limit = try arguments.integer("--limit", in: 0...Int.max)
    let locale = try arguments.option("--locale")
    if let locale, locale.isEmpty || locale.contains(where: { $0.isWhitespace }) {
        throw UsageError("--locale takes a locale identifier such as ko_KR, not '\(locale)'")
    }
    var ifRevision: UInt64?
    if let text = try arguments.option("--if-revision") {
        guard let value = UInt64(text) else {
            throw UsageError("--if-revision takes a revision number, not '\(text)'")
        }
        ifRevision = value
    }

    var configuration = ClientConfiguration(server: server, certificatesDirectory: certs)
    if let ca { configuration.caPath = ca }
    if let cert { configuration.certificatePath = cert }
    if let key { configuration.keyPath = key }
    if let records = environment["MEMO_TLS_RECORDS"], !records.isEmpty {
        guard configuration.useTLSRecords(named: records) else {
            throw UsageError("MEMO_TLS_RECORDS takes own or openssl, not '\(records)'")
        }
    }
    configuration.requestTimeout = .milliseconds(Int64((timeout * 1000).rounded(.up)))
    configuration.connectTimeout = configuration.requestTimeout

    guard let name = arguments.positional() else {
        try arguments.finish()
        return (configuration, nil, json, locale)
    }
    func rest(_ what: String) throws(UsageError) -> TextSource {
        var words: [String] = []
        while let word = arguments.positional() { words.append(word) }
        guard !words.isEmpty else { throw UsageError("\(name) needs \(what) (or - to read it from stdin)") }
        if words == ["-"] { return .standardInput }
        return .literal(words.joined(separator: " "))
    }
    func only(_ option: String, _ present: Bool, for commands: String) throws(UsageError) {
        if present { throw UsageError("\(option) is only for \(commands)") }
    }
    let command: ClientCommand
    switch name {
    case "list", "ls":
        command = .list(filter: filter, limit: limit)
    case "show", "get":
        command = .show(id: try arguments.required("an ID"))
    case "add", "new":
        command = .add(try rest("the memo's text"))
    case "edit":
        let id = try arguments.required("an ID")
        command = .edit(id: id, text: try rest("the new text"), ifRevision: ifRevision)
    case "rm", "delete":
        command = .remove(id: try arguments.required("an ID"), ifRevision: ifRevision)
    case "watch":
        command = .watch
    case "export":
        command = .export
    case "import":
        command = .importMemos(path: try arguments.required("a FILE (or - for stdin)"))
    default:
        throw UsageError("unknown command '\(name)'")
    }
    if case .list = command {} else {
        try only("--filter", filter != nil, for: "list")
        try only("--limit", limit != nil, for: "list")
    }
    switch command {
    case .edit, .remove: break
    default: try only("--if-revision", ifRevision != nil, for: "edit and rm")
    }
    try only("--locale", locale != nil, for: "the terminal front end (no command)")
    try arguments.finish()
    return (configuration, command, json, locale)
}

/// Runs the command line and returns the exit code. (A function rather than top-level code: the release
/// compiler of Swift 6.3 crashes on a `guard let` of a tuple element in an async top-level `main`.)
func runMain() async -> Int32 {
    let argv = Array(CommandLine.arguments.dropFirst())
    if argv.contains("--help") || argv.contains("-h") || argv.first == "help" {
        print(helpText, terminator: "")
        return 0
    }
    let configuration: ClientConfiguration
    let command: ClientCommand?
    let json: Bool
    let locale: String?
    do {
        (configuration, command, json, locale) = try parse(argv, environment: ProcessInfo.processInfo.environment)
    } catch {
        fail(usage: error)
    }
    guard let command else {
        if isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 {
            return await runFrontEnd(configuration: configuration, locale: locale)
        }
        fail(usage: UsageError("no command given (and not on a terminal)"))
    }
    let runner = CommandRunner(configuration: configuration, style: OutputStyle.detect(json: json))
    return await runner.run(command).rawValue
}

exit(await runMain())
