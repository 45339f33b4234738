import Foundation
import Glibc
import MemoClient
import MemoModel
import MemoNet
import MemoTLS

/// Where a memo's text comes from.
public enum TextSource: Sendable, Hashable {
    case literal(String)
    /// All of standard input, less one final newline ("\n"): the inverse of `show`, which prints the content
    /// and one newline.
    case standardInput
}

/// Input a command cannot use (exit 1), found before anything is sent.
public struct InputError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One `memo-client` command, parsed.
public enum ClientCommand: Sendable, Hashable {
    /// `limit` or `after` make it paged: served by the server a page at a time (`list-page`), the next page's
    /// cursor printed after it.
    case list(filter: String?, limit: Int?, after: ListCursor? = nil)
    case show(id: String)
    /// `allowEmpty`: empty content is refused unless this is set (the front end refuses empty memos too).
    /// `id`: create with this id, idempotently (the same id and content again change nothing; other content is a
    /// conflict).
    case add(TextSource, allowEmpty: Bool, id: UUID? = nil)
    /// `merge`: with `ifRevision`, a stale revision is merged by the server (`--merge`).
    case edit(id: String, text: TextSource, ifRevision: UInt64?, allowEmpty: Bool, merge: Bool = false)
    case remove(id: String, ifRevision: UInt64?)
    case watch
    /// `watch --since REVISION`: the changes after `revision` only, without the list first.
    case watchAfter(revision: UInt64)
    /// Every memo with its author; `versions`: with each memo's kept versions too.
    case export(versions: Bool)
    /// A file of `export` lines; "-" is standard input. `maxErrors`: stop after that many bad lines (0: never);
    /// `dryRun`: read and check every line, send nothing.
    case importMemos(path: String, maxErrors: Int = 100, dryRun: Bool = false)
    /// The certificate this client would present: read locally, no connection.
    case whoami
    /// How each server of `--server` is doing.
    case status
    /// `config contexts`: the contexts of the config file, the one in effect marked (read locally, no connection).
    case contexts(ContextsListing)
    /// `log ID`: the memo's kept versions, newest first, at most `limit` (nil: all, `--all`), older than revision
    /// `before` when given (`--before`). `patch`: each version followed by its difference from the one before, as
    /// `diff -u` prints it.
    case log(id: String, limit: Int?, patch: Bool, before: UInt64? = nil)
    /// `restore ID`: version `revision` of a live memo, or a memo back from the trash; `ifRevision` guards it.
    case restore(id: String, revision: UInt64?, ifRevision: UInt64?)
    /// `trash`: deleted memos, newest delete first, at most `limit` (nil: all, `--all`), deleted before revision
    /// `before` when given (`--before`).
    case trash(limit: Int?, before: UInt64? = nil)

    /// How many bad lines an import reports before it stops, unless `--max-errors` says otherwise.
    public static let defaultMaxErrors = 100
}

/// Runs one command against a server and prints its result: the logic of `memo-client`, kept out of
/// `main.swift` so that tests can drive it.
public struct CommandRunner: Sendable {
    public let configuration: ClientConfiguration
    public let formatter: MemoFormatter
    let out: BufferedOutput
    let err: BufferedOutput
    /// Where the day of the last certificate-expiry warning is kept (`ClientCertificate.warningsPath`).
    let warningsPath: String
    /// False under MEMO_EXPIRY_WARNING=0: commands other than whoami give no expiry warning.
    let warnsOfExpiry: Bool
    /// How many creates an import keeps in flight at once.
    static let importWindow = 64
    /// Print nothing on success (`--quiet`): add, edit, rm and import.
    public var quiet = false
    /// Show import's progress line on stderr (set when stderr is a terminal).
    public var progress = false
    /// On SIGINT during an import, print its summary and exit 130 (set by memo-client only: a library must not
    /// end its process).
    public var stopsOnInterrupt = false
    /// The event loop the command's connection runs on, lent by the caller (nil: the connection starts a loop
    /// thread of its own). memo-client lends the main thread's loop to add, show, edit and rm, whose task runs on
    /// it too: one thread for the whole command.
    public var loop: EventLoop?

    /// - Parameters:
    ///   - out: standard output, or a test's pipe; its broken-pipe handler is the caller's decision.
    ///   - environment: where the cache folder is (XDG_CACHE_HOME, HOME) for the daily expiry warning, and
    ///     MEMO_EXPIRY_WARNING=0, which turns that warning off.
    public init(
        configuration: ClientConfiguration, style: OutputStyle, out: BufferedOutput, err: BufferedOutput,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.configuration = configuration
        warningsPath = ClientCertificate.warningsPath(environment: environment)
        warnsOfExpiry = environment["MEMO_EXPIRY_WARNING"] != "0"
        formatter = MemoFormatter(style: style)
        self.out = out
        self.err = err
    }

    var style: OutputStyle { formatter.style }

    /// Runs `command`; errors are printed as one line on stderr.
    public func run(_ command: ClientCommand) async -> ExitCode {
        // The expiry warning, at most once a day, before the command's own output (whoami always gives it).
        if command != .whoami, !command.isContexts, warnsOfExpiry,
            let certificate = try? ClientCertificate(configuration: configuration),
            let warning = certificate.dailyWarning(now: UTCTime.now(), path: warningsPath)
        {
            err.line("memo-client: " + warning)
            err.flush()
        }
        let code: ExitCode
        do {
            code = try await execute(command)
        } catch {
            out.flush()
            report(error)
            return ExitCode(error)
        }
        out.flush()
        return code
    }

    func report(_ error: any Error) {
        err.line("memo-client: " + ExitCode.message(
            for: error, certificatesOrigin: configuration.certificatesOrigin,
            certificates: (configuration.caPath, configuration.certificatePath)))
        err.flush()
    }

    private func execute(_ command: ClientCommand) async throws -> ExitCode {
        // Each server on a connection of its own, not one connection failing over.
        if command == .status { return await status() }
        // Read stdin before connecting: a slow writer must not eat into the request deadline. Content the server
        // would refuse is refused here, before anything is sent.
        var text: String?
        switch command {
        case .add(let source, let allowEmpty, _), .edit(_, let source, _, let allowEmpty, _):
            let content = try Self.read(source)
            try MemoLimits.validate(content: content)
            if content.isEmpty, !allowEmpty {
                throw MemoError.invalidArgument(
                    "the memo is empty (\(source == .standardInput ? "nothing on stdin" : "no text")); "
                        + "give --allow-empty to store an empty memo")
            }
            text = content
        case .whoami:
            whoami(try ClientCertificate(configuration: configuration))
            return .ok
        case .contexts(let listing):
            printContexts(listing)
            return .ok
        case .importMemos(let path, let maxErrors, dryRun: true):
            // Nothing is sent: no connection either.
            return try await importMemos(path, maxErrors: maxErrors, nil)
        default: break
        }
        let client: MemoConnection
        // add sends its create right behind hello, without waiting for the welcome: one round trip less.
        var created: MemoConnection.CreateBehindHello?
        var createID = UUID()
        if case .add(_, _, let id) = command {
            if let id { createID = id }
            (client, created) = try await MemoConnection.connect(
                configuration, on: loop, creating: text ?? "", id: createID,
                timeout: configuration.connectTimeout + configuration.requestTimeout)
        } else {
            client = try await MemoConnection.connect(configuration, on: loop)
        }
        defer { client.close() }
        // Connecting had its --timeout; the write has its own, retries of an unknown outcome included (a slow
        // connect must not leave a write a few milliseconds, which would make its outcome unknown for nothing).
        let retry = WriteRetry(deadline: ContinuousClock.now + configuration.requestTimeout)
        switch command {
        case .list(let filter, let limit, let after):
            try await list(filter: filter, limit: limit, after: after, client)
        case .show(let idText):
            let (id, found) = try await resolve(idText, client)
            let memo: Memo
            if let found { memo = found } else { memo = try await client.get(id: id) }
            out.write(formatter.detail(memo))
        case .add(_, _, let id):
            let baseline = client.serverRevision ?? 0
            let memo = try await add(text ?? "", id: createID, client, retry, firstTry: created)
            // With --id, the same id and content again return the memo as it was (an older revision).
            let verb = id != nil && memo.revision <= baseline ? "unchanged" : "created"
            if !quiet { out.line(formatter.written(memo, verb: verb)) }
        case .edit(let idText, _, let ifRevision, _, let merge):
            let (id, found) = try await resolve(idText, client)
            let memo = try await edit(
                id, found: found, to: text ?? "", ifRevision: ifRevision, merge: merge, client, retry)
            if !quiet { out.line(formatter.written(memo, verb: "updated")) }
        case .remove(let idText, let ifRevision):
            let (id, found) = try await resolve(idText, client)
            var known = found
            if known == nil { known = try? await client.get(id: id, timeout: retry.timeLeft) }
            let memo = try await remove(id, known: known, ifRevision: ifRevision, client, retry)
            if !quiet { out.line(formatter.written(memo, verb: "deleted")) }
        case .watch:
            try await watch(client)
        case .watchAfter(let revision):
            try await watch(client, after: revision)
        case .export(let versions):
            for memo in try await client.list().memos {
                guard versions else {
                    out.line(MemoJSON.object(memo, author: true))
                    continue
                }
                out.line(MemoJSON.object(memo, versions: try await Self.versions(of: memo.id, limit: nil, client)))
            }
        case .importMemos(let path, let maxErrors, _):
            return try await importMemos(path, maxErrors: maxErrors, client)
        case .log(let idText, let limit, let patch, let before):
            try await log(idText, limit: limit, before: before, patch: patch, client)
        case .restore(let idText, let revision, let ifRevision):
            let id = try await resolveKnown(idText, client)
            let memo: Memo
            do {
                memo = try await client.restore(
                    id: id, revision: revision, expectedRevision: ifRevision, timeout: retry.timeLeft)
            } catch MemoError.invalidArgument where revision == nil {
                throw CommandUsageError(
                    "memo \(id.lowercasedString) is not deleted: give --revision R, a version memo-client "
                        + "log lists")
            }
            out.write(formatter.detail(memo))
        case .trash(let limit, let before):
            try await trash(limit: limit, before: before, client)
        case .whoami, .contexts:
            break  // answered before connecting
        case .status:
            break  // answered above
        }
        return .ok
    }

    /// `whoami`: the fields as `field<TAB>value` lines (aligned for people), or one JSON object; the expiry
    /// warning on stderr.
    private func whoami(_ certificate: ClientCertificate) {
        let now = UTCTime.now()
        if style.json {
            out.line(certificate.json(now: now))
        } else {
            let width = certificate.fields(now: now).map(\.0.count).max() ?? 0
            for (name, value) in certificate.fields(now: now) {
                out.line(style.human ? name + String(repeating: " ", count: width - name.count + 2) + value
                    : name + "\t" + value)
            }
        }
        out.flush()
        if let warning = certificate.warning(now: now) {
            err.line("memo-client: " + warning)
            err.flush()
        }
    }

    func printList(_ memos: [Memo]) {
        if memos.isEmpty, style.human, !style.json {
            out.line("(no memos)")
            return
        }
        for memo in memos { out.line(formatter.line(memo)) }
    }

    /// A full id as it is, or the one memo whose id starts with the given prefix.
    func resolve(_ text: String, _ client: MemoConnection) async throws -> (UUID, Memo?) {
        if let id = UUID(uuidString: text) { return (id, nil) }
        let prefix = text.lowercased()
        guard !prefix.isEmpty else { throw CommandUsageError("an id cannot be empty") }
        let matches = try await client.list().memos.filter { $0.id.lowercasedString.hasPrefix(prefix) }
        guard let first = matches.first else { throw IDLookupError.notFound(text) }
        guard matches.count == 1 else {
            throw IDLookupError.ambiguous(text, matches: matches.map { $0.id.lowercasedString })
        }
        return (first.id, first)
    }

    /// An id for `log` and `restore`: a whole UUID as given (a memo in the trash is not in the list), else a
    /// unique prefix of a live memo's id.
    func resolveKnown(_ text: String, _ client: MemoConnection) async throws -> UUID {
        try await resolve(text, client).0
    }

    static func read(_ source: TextSource) throws -> String {
        switch source {
        case .literal(let text): return text
        case .standardInput: return try readStandardInput()
        }
    }

    /// Standard input less one final "\n", read with read(2) up to the content limit plus the newline plus one
    /// byte and no further: endless input (`yes | memo-client add -`) is refused after 65,538 bytes, not
    /// buffered.
    /// - Throws: `MemoError.invalidArgument` for input over the limit or not valid UTF-8.
    static func readStandardInput(fd: Int32 = STDIN_FILENO) throws -> String {
        let cap = MemoLimits.maxContentBytes + 2
        var bytes = [UInt8](repeating: 0, count: cap)
        var count = 0
        while count < cap {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, cap - count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw MemoError.invalidArgument("cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            count += got
        }
        if count == cap {
            throw InputError(
                "content is over the limit of \(MemoLimits.maxContentBytes) bytes (standard input holds more than "
                    + "\(cap - 1); reading stopped there)")
        }
        if count > 0, bytes[count - 1] == UInt8(ascii: "\n") { count -= 1 }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
            throw MemoError.invalidArgument("standard input is not valid UTF-8")
        }
        return text
    }

    // MARK: - watch

    /// Prints the list, then every change, until the process is stopped; resumes across reconnects.
    private func watch(_ client: MemoConnection) async throws {
        let store = try RemoteStore(client: client)
        let formatter = self.formatter
        let out = self.out
        let err = self.err
        let human = style.human
        // Subscribe before the mirror starts, so nothing happens between the list and the first change.
        let printing = store.events.subscribe { event in
            switch event {
            case .reset(let revision, let memos, let resync):
                // After a history-gone the changes missed are unknown: say so, then the whole list, never a
                // made-up difference.
                if resync { out.line(formatter.resync(revision: revision)) }
                if memos.isEmpty, human, !formatter.style.json {
                    out.line("(no memos)")
                } else {
                    for memo in memos { out.line(formatter.existing(memo)) }
                }
            case .changes(let changes):
                for change in changes { out.line(formatter.line(change)) }
            case .failed(let message):
                err.line("memo-client: the server refused the subscription: \(message)")
                err.flush()
            case .fresh, .resubscribe:
                break
            }
            out.flush()
        }
        let reporting = reportConnection(client)
        defer {
            printing.cancel()
            reporting.cancel()
            // The store mirrors for as long as it lives: it must outlive the wait, not only its last use above.
            withExtendedLifetime(store) {}
        }
        store.startMirror()
        try await untilStopped(client)
    }
}
