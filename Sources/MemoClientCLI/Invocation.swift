import Foundation
import MemoCLI
import MemoClient
import MemoModel
import MemoNet

// memo-client's command line, read into an `Invocation` without running anything, so that tests can check it.

/// What the command line asks for.
public enum Invocation: Sendable {
    case help(command: String?)
    /// `help --reference`: the command reference README.md carries.
    case reference
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

    /// An option's value, else its environment variable's (ClientCommandTable says which).
    private static func setting(
        _ line: ParsedLine, _ name: String, _ environment: [String: String]
    ) throws(UsageError) -> Setting? {
        try line.setting(ClientCommandTable.option(name), environment: environment)
    }

    /// Where and how to connect: flags first, then the environment, then the context (`context`, see
    /// `ContextsFile`), then the defaults. `--certs` and `MEMO_CERTS` name the three files, so they too come before
    /// the context's.
    static func connectionOptions(
        _ line: ParsedLine, environment: [String: String], context: ContextsFile.Context? = nil,
        contextsPath: String = ""
    ) throws(UsageError) -> ClientConfiguration {
        let serverSetting = try setting(line, "--server", environment)
        let serverText = serverSetting?.value ?? context?.server ?? "127.0.0.1"
        let serverSource = serverSetting == nil && context?.server != nil
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
        // A folder named by the user names all three files: the context's give way to it.
        let fileContext = try setting(line, "--certs", environment) == nil ? context : nil
        let folder = ClientConfiguration.certificatesDirectory(
            option: line.value("--certs"), environment: environment,
            isDirectory: { path in
                var directory: ObjCBool = false
                return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
            })
        let ca = try setting(line, "--ca", environment)?.value ?? fileContext?.ca
        let cert = try setting(line, "--cert", environment)?.value ?? fileContext?.cert
        let key = try setting(line, "--key", environment)?.value ?? fileContext?.key
        var timeout: Double?
        if let given = try setting(line, "--timeout", environment) {
            guard let value = Double(given.value), value > 0, value.isFinite else {
                throw UsageError("\(given.source) takes a number of seconds above zero, not '\(given.value)'")
            }
            timeout = value
        }
        // 0 turns the keepalive off, so this is not a number of seconds above zero.
        var keepalive: Double?
        if let given = try setting(line, "--keepalive", environment) {
            guard let value = Double(given.value), value >= 0, value.isFinite, value <= 86_400 else {
                throw UsageError(
                    "\(given.source) takes a number of seconds from 0 (off) to 86400, not '\(given.value)'")
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
        // Resumption needs OpenSSL's records (it reads the ticket): MEMO_TLS_RECORDS=own asks for a client
        // without them, so it does without resumption.
        if let resume = setting("MEMO_TLS_RESUME", environment), resume != "1" {
            guard resume == "0" else { throw UsageError("MEMO_TLS_RESUME takes 0 (off) or 1 (on), not '\(resume)'") }
        } else if setting("MEMO_TLS_RECORDS", environment) != "own" {
            configuration.tlsSessionCache = tlsSessionFolder(environment)
        }
        configuration.requestTimeout = .milliseconds(Int64(((timeout ?? 10) * 1000).rounded(.up)))
        configuration.connectTimeout = configuration.requestTimeout
        if let keepalive {
            configuration.keepalive = keepalive == 0 ? nil : .milliseconds(Int64((keepalive * 1000).rounded(.up)))
        }
        return configuration
    }

    /// Where TLS sessions are saved: `$XDG_CACHE_HOME/memo` when that is an absolute path, else `$HOME/.cache/memo`;
    /// nil (no resumption) without either.
    static func tlsSessionFolder(_ environment: [String: String]) -> String? {
        if let base = environment["XDG_CACHE_HOME"], base.hasPrefix("/") { return base + "/memo" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.cache/memo"
    }

    /// Everything the command line says, read in one go: ClientCommandTable's parser checks the options (unknown,
    /// missing values, given twice, for another command), then each command reads its arguments.
    /// - Parameter environment: read only when the line is more than help or the version.
    public static func parse(
        _ argv: [String], environment readEnvironment: @autoclosure () -> [String: String]
    ) throws(UsageError) -> Invocation {
        let line = try ClientCommandTable.table.parse(argv)
        if line.wantsHelp { return .help(command: line.helpTopic) }
        if line.flag("--version") { return .version }
        let environment = readEnvironment()
        var arguments = line.arguments
        var json = line.flag("--json")
        let output = try line.value("--output").map { text throws(UsageError) in try OutputFormat.parse(text) }
        if let output, json, output != .json {
            throw UsageError("--json and -o \(output.rawValue) ask for different output")
        }
        if output == .json { json = true }
        let allowEmpty = line.flag("--allow-empty")
        let quiet = line.flag("--quiet")
        let dryRun = line.flag("--dry-run")
        let contexts = try contexts(line, environment: environment)
        let configuration = try connectionOptions(
            line, environment: environment, context: contexts.selected, contextsPath: contexts.listing.path)
        let filter = line.value("--filter")
        let limit = try arguments.integer("--limit", in: 1...Int(UInt32.max))
        let after = try cursor(line)
        let locale = line.value("--locale")
        if let locale, locale.isEmpty || locale.contains(where: { $0.isWhitespace }) {
            throw UsageError("--locale takes a locale identifier such as ko_KR, not '\(locale)'")
        }
        var givenID: UUID?
        if let text = line.value("--id") {
            guard let id = UUID(uuidString: text) else { throw UsageError("--id takes a UUID, not '\(text)'") }
            givenID = id
        }
        let maxErrors = try arguments.integer("--max-errors", in: 0...Int.max)
        var since: UInt64?
        if let text = line.value("--since") {
            guard let value = UInt64(text) else { throw UsageError("--since takes a revision number, not '\(text)'") }
            since = value
        }
        var ifRevision: UInt64?
        if let text = line.value("--if-revision") {
            guard let value = UInt64(text) else {
                throw UsageError("--if-revision takes a revision number, not '\(text)'")
            }
            ifRevision = value
        }

        guard let name = line.command?.name else {
            if let output { throw UsageError("-o \(output.rawValue) is for commands, not the terminal front end") }
            return .run(configuration, nil, json: json, locale: locale)
        }
        var positionals = line.positionals[...]
        func required(_ what: String) throws(UsageError) -> String {
            guard let value = positionals.popFirst() else { throw UsageError("missing \(what)") }
            return value
        }
        func finish() throws(UsageError) {
            if let extra = positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        }
        func rest(_ what: String) throws(UsageError) -> TextSource {
            let words = Array(positionals)
            positionals = []
            guard !words.isEmpty else { throw UsageError("\(name) needs \(what) (or - to read it from stdin)") }
            if words == ["-"] { return .standardInput }
            return .literal(words.joined(separator: " "))
        }
        let command: ClientCommand
        switch name {
        case "list":
            command = .list(filter: filter, limit: limit, after: after)
        case "show":
            command = .show(id: try required("an ID"))
        case "add":
            command = .add(try rest("the memo's text"), allowEmpty: allowEmpty, id: givenID)
        case "edit":
            let id = try required("an ID")
            let merge = line.flag("--merge")
            if merge && ifRevision == nil { throw UsageError("--merge needs --if-revision N, the revision the edit started from") }
            command = .edit(
                id: id, text: try rest("the new text"), ifRevision: ifRevision, allowEmpty: allowEmpty, merge: merge)
        case "rm":
            command = .remove(id: try required("an ID"), ifRevision: ifRevision)
        case "watch":
            command = since.map { .watchAfter(revision: $0) } ?? .watch
        case "status":
            command = .status
        case "export":
            command = .export(versions: line.flag("--versions"))
        case "import":
            command = .importMemos(
                path: try required("a FILE (or - for stdin)"),
                maxErrors: maxErrors ?? ClientCommand.defaultMaxErrors, dryRun: dryRun)
        case "log":
            let (pageLimit, before) = try versionsPage(line, limit: limit)
            command = .log(id: try required("an ID"), limit: pageLimit, patch: line.flag("--patch"), before: before)
        case "restore":
            var revision: UInt64?
            if let text = line.value("--revision") {
                guard let value = UInt64(text) else {
                    throw UsageError("--revision takes a revision number, not '\(text)'")
                }
                revision = value
            }
            var expect = ifRevision
            if let text = line.value("--expect") {
                guard let value = UInt64(text) else { throw UsageError("--expect takes a revision number, not '\(text)'") }
                expect = value
            }
            command = .restore(id: try required("an ID"), revision: revision, ifRevision: expect)
        case "trash":
            let (pageLimit, before) = try versionsPage(line, limit: limit)
            command = .trash(limit: pageLimit, before: before)
        case "whoami":
            command = .whoami
        case "config contexts":
            command = .contexts(contexts.listing)
        case "completion":
            let shells = CommandTable.completionShells
            let shell = try required("a shell: " + shells.joined(separator: ", "))
            try finish()
            if shell == "ids" { return .completionIDs(server: configuration.server) }
            guard shells.contains(shell) else {
                throw UsageError(
                    "completion takes \(shells.dropLast().joined(separator: ", ")) or \(shells.last!), not '\(shell)'")
            }
            return .completion(shell: shell)
        case "help":
            let topic = positionals.popFirst()
            try finish()
            if line.flag("--reference") {
                if let topic { throw UsageError("help --reference takes no COMMAND, not '\(topic)'") }
                return .reference
            }
            return .help(command: topic)
        default:
            // The table and this switch name the same commands (CommandTableTests).
            throw UsageError("unknown command '\(name)'")
        }
        try finish()
        if let output, !output.applies(to: command) {
            if output == .tsv { throw UsageError("export prints JSON lines only: -o tsv does not apply to it") }
            throw UsageError("-o \(output.rawValue) is only for \(OutputFormat.memoCommands)")
        }
        return .run(configuration, command, json: json, locale: locale, quiet: quiet, output: output)
    }
}

extension Invocation {
    /// `log` and `trash`: at most `--limit` (default 50) or every one (`--all`), older than `--before REVISION`.
    static func versionsPage(
        _ line: ParsedLine, limit: Int?
    ) throws(UsageError) -> (limit: Int?, before: UInt64?) {
        var before: UInt64?
        if let text = line.value("--before") {
            guard let value = UInt64(text), value > 0 else {
                throw UsageError("--before takes a revision number above 0, not '\(text)'")
            }
            before = value
        }
        guard line.flag("--all") else { return (limit ?? VersionPolicy.defaultKeep, before) }
        if let limit { throw UsageError("--all and --limit \(limit) ask for different counts: give one") }
        return (nil, before)
    }

    /// `--after CURSOR`: a cursor `list` printed.
    static func cursor(_ line: ParsedLine) throws(UsageError) -> ListCursor? {
        guard let text = line.value("--after") else { return nil }
        guard let cursor = ListCursor(token: text) else {
            throw UsageError("--after takes the cursor a paged list printed (48 hex digits), not '\(text)'")
        }
        return cursor
    }

    /// `--context NAME` (or `MEMO_CONTEXT`, or the file's `current`) and the config file it is read from.
    static func contexts(
        _ line: ParsedLine, environment: [String: String]
    ) throws(UsageError) -> (selected: ContextsFile.Context?, listing: ContextsListing) {
        let path = ContextsFile.defaultPath(environment: environment)
        let file = try ContextsFile.load(path: path, home: environment["HOME"].flatMap { $0.isEmpty ? nil : $0 })
        let selected = try ContextsFile.selected(
            option: line.value("--context"), environment: environment, file: file, path: path)
        return (selected, ContextsListing(file: file, path: path, selected: selected?.name))
    }
}
