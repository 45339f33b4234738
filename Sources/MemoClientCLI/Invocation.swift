import Foundation
import MemoCLI
import MemoClient
import MemoCore
import MemoNet

// memo-client's command line, read into an `Invocation` without running anything, so that tests can check it.

/// What the command line asks for.
public enum Invocation: Sendable {
    case help(command: String?)
    case version
    case completion(shell: String)
    case completionIDs(server: String)
    /// `quiet`: print nothing on success (add, edit, rm, import). `output`: `-o`'s form (`--json` is `-o json`).
    case run(
        ClientConfiguration, ClientCommand?, json: Bool, locale: String?, quiet: Bool = false,
        output: OutputFormat? = nil)
}

/// An argument that is not valid UTF-8, refused as standard input's bytes are (exit 1).
public struct ArgumentEncodingError: Error, Sendable, CustomStringConvertible {
    /// 1 for the first argument after the program's name.
    public let position: Int
    public var description: String { "invalid argument: argument \(position) is not valid UTF-8" }
}

extension Invocation {
    /// The arguments after the program's name, decoded from their own bytes (`CommandLine.unsafeArgv`), or the
    /// first one that is not valid UTF-8: `CommandLine.arguments` would have repaired it with U+FFFD.
    public static func arguments(
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, count: Int
    ) -> Result<[String], ArgumentEncodingError> {
        var decoded: [String] = []
        for index in 1..<max(count, 1) {
            guard let pointer = argv[index] else { break }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(ArgumentEncodingError(position: index))
            }
            decoded.append(text)
        }
        return .success(decoded)
    }

    /// A value from the environment, nil when unset or empty.
    private static func setting(_ name: String, _ environment: [String: String]) -> String? {
        environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Where and how to connect: flags first, then the environment, then the context (`context`, see
    /// `ContextsFile`), then the defaults. `--certs` and `MEMO_CERTS` name the three files, so they too come before
    /// the context's.
    static func connectionOptions(
        _ arguments: inout Arguments, environment: [String: String], context: ContextsFile.Context? = nil,
        contextsPath: String = ""
    ) throws(UsageError) -> ClientConfiguration {
        let serverOption = try arguments.option("--server")
        let serverText = serverOption ?? setting("MEMO_SERVER", environment) ?? context?.server ?? "127.0.0.1"
        let serverSource = serverOption == nil && setting("MEMO_SERVER", environment) == nil && context?.server != nil
            ? "server of context '\(context?.name ?? "")' (\(contextsPath) line \(context?.line ?? 0))" : "--server"
        // Several addresses, separated by commas, are servers over one PostgreSQL: each is checked on its own.
        let servers: [HostPort]
        do {
            servers = try serverText.split(separator: ",", omittingEmptySubsequences: false).map { address in
                try HostPort(parsing: String(address), defaultPort: ClientConfiguration.defaultPort)
            }
        } catch {
            throw UsageError("\(serverSource): \(error)")
        }
        let certsOption = try arguments.option("--certs")
        // A folder named by the user names all three files: the context's give way to it.
        let fileContext = certsOption == nil && setting("MEMO_CERTS", environment) == nil ? context : nil
        let folder = ClientConfiguration.certificatesDirectory(
            option: certsOption, environment: environment,
            isDirectory: { path in
                var directory: ObjCBool = false
                return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
            })
        let caOptions = try arguments.options("--ca") + arguments.options("--cacert")
        guard caOptions.count <= 1 else { throw UsageError("--ca (or --cacert) is given \(caOptions.count) times") }
        let ca = caOptions.first ?? setting("MEMO_CA", environment) ?? fileContext?.ca
        let cert = try arguments.option("--cert") ?? setting("MEMO_CERT", environment) ?? fileContext?.cert
        let key = try arguments.option("--key") ?? setting("MEMO_KEY", environment) ?? fileContext?.key
        var timeout = try arguments.seconds("--timeout")
        if timeout == nil, let text = setting("MEMO_TIMEOUT", environment) {
            guard let value = Double(text), value > 0, value.isFinite else {
                throw UsageError("MEMO_TIMEOUT takes a number of seconds above zero, not '\(text)'")
            }
            timeout = value
        }
        // 0 turns the keepalive off, so this is not `seconds` (which takes only a number above zero).
        var keepalive: Double?
        var keepaliveSource = "--keepalive"
        var keepaliveText = try arguments.option("--keepalive")
        if keepaliveText == nil {
            keepaliveText = setting("MEMO_KEEPALIVE", environment)
            keepaliveSource = "MEMO_KEEPALIVE"
        }
        if let text = keepaliveText {
            guard let value = Double(text), value >= 0, value.isFinite, value <= 86_400 else {
                throw UsageError("\(keepaliveSource) takes a number of seconds from 0 (off) to 86400, not '\(text)'")
            }
            keepalive = value
        }

        var configuration = ClientConfiguration(
            server: servers.map(\.description).joined(separator: ","), certificatesDirectory: folder.path)
        configuration.certificatesOrigin = folder.origin
        if let ca { configuration.caPath = ca }
        if let cert { configuration.certificatePath = cert }
        if let key { configuration.keyPath = key }
        if ca != nil, cert != nil, key != nil { configuration.certificatesOrigin = nil }
        if let fileContext, fileContext.ca != nil || fileContext.cert != nil || fileContext.key != nil {
            configuration.certificatesOrigin = "context '\(fileContext.name)' of \(contextsPath)"
                + (ca != nil && cert != nil && key != nil ? "" : ", the rest from " + folder.origin)
        }
        if let records = setting("MEMO_TLS_RECORDS", environment) {
            guard configuration.useTLSRecords(named: records) else {
                throw UsageError("MEMO_TLS_RECORDS takes own or openssl, not '\(records)'")
            }
        }
        configuration.requestTimeout = .milliseconds(Int64(((timeout ?? 10) * 1000).rounded(.up)))
        configuration.connectTimeout = configuration.requestTimeout
        if let keepalive {
            configuration.keepalive = keepalive == 0 ? nil : .milliseconds(Int64((keepalive * 1000).rounded(.up)))
        }
        return configuration
    }

    /// Everything the command line says, read in one go (options first: the reader takes positionals last).
    public static func parse(_ argv: [String], environment: [String: String]) throws(UsageError) -> Invocation {
        var arguments = Arguments(argv)
        if arguments.flag("--help", "-h") { return .help(command: HelpTopics.command(in: argv)) }
        if arguments.flag("--version") { return .version }
        var json = arguments.flag("--json")
        let output = try outputFormat(&arguments, json: json)
        if output == .json { json = true }
        let allowEmpty = arguments.flag("--allow-empty")
        let quiet = arguments.flag("--quiet", "-q")
        let dryRun = arguments.flag("--dry-run")
        let contexts = try contexts(&arguments, environment: environment)
        let configuration = try connectionOptions(
            &arguments, environment: environment, context: contexts.selected, contextsPath: contexts.listing.path)
        let filter = try arguments.option("--filter")
        let limit = try arguments.integer("--limit", in: 1...Int(UInt32.max))
        let after = try cursor(&arguments)
        let locale = try arguments.option("--locale")
        if let locale, locale.isEmpty || locale.contains(where: { $0.isWhitespace }) {
            throw UsageError("--locale takes a locale identifier such as ko_KR, not '\(locale)'")
        }
        var givenID: UUID?
        if let text = try arguments.option("--id") {
            guard let id = UUID(uuidString: text) else { throw UsageError("--id takes a UUID, not '\(text)'") }
            givenID = id
        }
        let maxErrors = try arguments.integer("--max-errors", in: 0...Int.max)
        var since: UInt64?
        if let text = try arguments.option("--since") {
            guard let value = UInt64(text) else { throw UsageError("--since takes a revision number, not '\(text)'") }
            since = value
        }
        var ifRevision: UInt64?
        if let text = try arguments.option("--if-revision") {
            guard let value = UInt64(text) else {
                throw UsageError("--if-revision takes a revision number, not '\(text)'")
            }
            ifRevision = value
        }
        // Every option this program knows is taken by now: what is left that looks like one is not ours, and
        // must not be mistaken for the command (`-o json list` is not the command "json").
        try arguments.rejectUnknownOptions()

        func only(_ option: String, _ present: Bool, for commands: String) throws(UsageError) {
            if present { throw UsageError("\(option) is only for \(commands)") }
        }
        guard let name = arguments.positional() else {
            try only("--quiet", quiet, for: "add, edit, rm and import")
            if let output { throw UsageError("-o \(output.rawValue) is for commands, not the terminal front end") }
            return .run(configuration, nil, json: json, locale: locale)
        }
        func rest(_ what: String) throws(UsageError) -> TextSource {
            var words: [String] = []
            while let word = arguments.positional() { words.append(word) }
            guard !words.isEmpty else { throw UsageError("\(name) needs \(what) (or - to read it from stdin)") }
            if words == ["-"] { return .standardInput }
            return .literal(words.joined(separator: " "))
        }
        let command: ClientCommand
        switch name {
        case "list", "ls":
            command = .list(filter: filter, limit: limit, after: after)
        case "show", "get":
            command = .show(id: try arguments.required("an ID"))
        case "add", "new":
            command = .add(try rest("the memo's text"), allowEmpty: allowEmpty, id: givenID)
        case "edit":
            let id = try arguments.required("an ID")
            command = .edit(id: id, text: try rest("the new text"), ifRevision: ifRevision, allowEmpty: allowEmpty)
        case "rm", "delete":
            command = .remove(id: try arguments.required("an ID"), ifRevision: ifRevision)
        case "watch":
            command = since.map { .watchAfter(revision: $0) } ?? .watch
        case "status":
            command = .status
        case "export":
            command = .export
        case "import":
            command = .importMemos(
                path: try arguments.required("a FILE (or - for stdin)"),
                maxErrors: maxErrors ?? ClientCommand.defaultMaxErrors, dryRun: dryRun)
        case "whoami":
            command = .whoami
        case "config":
            let topic = try arguments.required("what to show: contexts")
            guard topic == "contexts" else { throw UsageError("config takes contexts, not '\(topic)'") }
            command = .contexts(contexts.listing)
        case "completion":
            let shell = try arguments.required("a shell: bash or zsh")
            if shell == "ids" {
                try arguments.finish()
                return .completionIDs(server: configuration.server)
            }
            guard shell == "bash" || shell == "zsh" else {
                throw UsageError("completion takes bash or zsh, not '\(shell)'")
            }
            try arguments.finish()
            return .completion(shell: shell)
        case "help":
            let topic = arguments.positional()
            try arguments.finish()
            return .help(command: topic)
        default:
            throw UsageError("unknown command '\(name)'")
        }
        if case .list = command {} else {
            try only("--filter", filter != nil, for: "list")
            try only("--limit", limit != nil, for: "list")
            try only("--after", after != nil, for: "list")
        }
        if let output, !output.applies(to: command) {
            if output == .tsv { throw UsageError("export prints JSON lines only: -o tsv does not apply to it") }
            throw UsageError("-o \(output.rawValue) is only for \(OutputFormat.memoCommands)")
        }
        switch command {
        case .edit, .remove: break
        default: try only("--if-revision", ifRevision != nil, for: "edit and rm")
        }
        switch command {
        case .add, .edit: break
        default: try only("--allow-empty", allowEmpty, for: "add and edit")
        }
        if case .add = command {} else { try only("--id", givenID != nil, for: "add") }
        switch command {
        case .watch, .watchAfter: break
        default: try only("--since", since != nil, for: "watch")
        }
        if case .importMemos = command {} else {
            try only("--max-errors", maxErrors != nil, for: "import")
            try only("--dry-run", dryRun, for: "import")
        }
        switch command {
        case .add, .edit, .remove, .importMemos: break
        default: try only("--quiet", quiet, for: "add, edit, rm and import")
        }
        try only("--locale", locale != nil, for: "the terminal front end (no command)")
        try arguments.finish()
        return .run(configuration, command, json: json, locale: locale, quiet: quiet, output: output)
    }
}

extension Invocation {
    /// `-o`/`--output FORMAT`, given once, agreeing with `--json` when both are given.
    static func outputFormat(_ arguments: inout Arguments, json: Bool) throws(UsageError) -> OutputFormat? {
        let given = try arguments.options("-o") + arguments.options("--output")
        guard given.count <= 1 else { throw UsageError("-o (--output) is given \(given.count) times") }
        guard let text = given.first else { return nil }
        let format = try OutputFormat.parse(text)
        if json, format != OutputFormat.json { throw UsageError("--json and -o \(text) ask for different output") }
        return format
    }

    /// `--after CURSOR`: a cursor `list` printed.
    static func cursor(_ arguments: inout Arguments) throws(UsageError) -> ListCursor? {
        guard let text = try arguments.option("--after") else { return nil }
        guard let cursor = ListCursor(token: text) else {
            throw UsageError("--after takes the cursor a paged list printed (48 hex digits), not '\(text)'")
        }
        return cursor
    }
}

extension Invocation {
    /// `--context NAME` (or `MEMO_CONTEXT`, or the file's `current`) and the config file it is read from.
    static func contexts(
        _ arguments: inout Arguments, environment: [String: String]
    ) throws(UsageError) -> (selected: ContextsFile.Context?, listing: ContextsListing) {
        let option = try arguments.option("--context")
        let path = ContextsFile.defaultPath(environment: environment)
        let file = try ContextsFile.load(path: path, home: environment["HOME"].flatMap { $0.isEmpty ? nil : $0 })
        let selected = try ContextsFile.selected(option: option, environment: environment, file: file, path: path)
        return (selected, ContextsListing(file: file, path: path, selected: selected?.name))
    }
}
