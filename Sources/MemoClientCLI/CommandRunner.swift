import Foundation
import MemoClient
import MemoCore

/// Where a memo's text comes from.
public enum TextSource: Sendable, Hashable {
    case literal(String)
    /// All of standard input, less one final newline.
    case standardInput
}

/// One `memo-client` command, parsed.
public enum ClientCommand: Sendable, Hashable {
    case list(filter: String?, limit: Int?)
    case show(id: String)
    /// `allowEmpty`: empty content is refused unless this is set (the front end refuses empty memos too).
    case add(TextSource, allowEmpty: Bool)
    case edit(id: String, text: TextSource, ifRevision: UInt64?, allowEmpty: Bool)
    case remove(id: String, ifRevision: UInt64?)
    case watch
    case export
    /// A file of `export` lines; "-" is standard input.
    case importMemos(path: String)
}

/// Runs one command against a server and prints its result: the logic of `memo-client`, kept out of
/// `main.swift` so that tests can drive it.
public struct CommandRunner: Sendable {
    public let configuration: ClientConfiguration
    public let formatter: MemoFormatter
    let out: BufferedOutput
    let err: BufferedOutput
    /// How many creates an import keeps in flight at once.
    static let importWindow = 64

    /// - Parameters:
    ///   - out: standard output, or a test's pipe; its broken-pipe handler is the caller's decision.
    public init(configuration: ClientConfiguration, style: OutputStyle, out: BufferedOutput, err: BufferedOutput) {
        self.configuration = configuration
        formatter = MemoFormatter(style: style)
        self.out = out
        self.err = err
    }

    var style: OutputStyle { formatter.style }

    /// Runs `command`; errors are printed as one line on stderr.
    public func run(_ command: ClientCommand) async -> ExitCode {
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
        err.line("memo-client: " + ExitCode.message(for: error, certificatesOrigin: configuration.certificatesOrigin))
        err.flush()
    }

    private func execute(_ command: ClientCommand) async throws -> ExitCode {
        // Read stdin before connecting: a slow writer must not eat into the request deadline. Content the server
        // would refuse is refused here, before anything is sent.
        var text: String?
        switch command {
        case .add(let source, let allowEmpty), .edit(_, let source, _, let allowEmpty):
            let content = try Self.read(source)
            try MemoLimits.validate(content: content)
            if content.isEmpty, !allowEmpty {
                throw MemoError.invalidArgument(
                    "the memo is empty (\(source == .standardInput ? "nothing on stdin" : "no text")); "
                        + "give --allow-empty to store an empty memo")
            }
            text = content
        default: break
        }
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        // Connecting had its --timeout; the write has its own, retries of an unknown outcome included (a slow
        // connect must not leave a write a few milliseconds, which would make its outcome unknown for nothing).
        let retry = WriteRetry(deadline: ContinuousClock.now + configuration.requestTimeout)
        switch command {
        case .list(let filter, let limit):
            var memos = try await client.list().memos
            if let filter, !filter.isEmpty {
                let needle = filter.lowercased()
                memos = memos.filter { $0.content.lowercased().contains(needle) }
            }
            if let limit { memos = Array(memos.prefix(limit)) }
            printList(memos)
        case .show(let idText):
            let (id, found) = try await resolve(idText, client)
            let memo: Memo
            if let found { memo = found } else { memo = try await client.get(id: id) }
            out.write(formatter.detail(memo))
        case .add:
            let memo = try await add(text ?? "", client, retry)
            out.line(formatter.written(memo, verb: "created"))
        case .edit(let idText, _, let ifRevision, _):
            let (id, found) = try await resolve(idText, client)
            let memo = try await edit(id, found: found, to: text ?? "", ifRevision: ifRevision, client, retry)
            out.line(formatter.written(memo, verb: "updated"))
        case .remove(let idText, let ifRevision):
            let (id, found) = try await resolve(idText, client)
            var known = found
            if known == nil { known = try? await client.get(id: id, timeout: retry.timeLeft) }
            let memo = try await remove(id, known: known, ifRevision: ifRevision, client, retry)
            out.line(formatter.written(memo, verb: "deleted"))
        case .watch:
            try await watch(client)
        case .export:
            for memo in try await client.list().memos { out.line(MemoJSON.object(memo)) }
        case .importMemos(let path):
            return try await importMemos(path, client)
        }
        return .ok
    }

    private func printList(_ memos: [Memo]) {
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
        let matches = try await client.list().memos.filter { $0.id.uuidString.lowercased().hasPrefix(prefix) }
        guard let first = matches.first else { throw IDLookupError.notFound(text) }
        guard matches.count == 1 else {
            throw IDLookupError.ambiguous(text, matches: matches.map { $0.id.uuidString.lowercased() })
        }
        return (first.id, first)
    }

    static func read(_ source: TextSource) throws -> String {
        switch source {
        case .literal(let text): return text
        case .standardInput:
            let data = FileHandle.standardInput.readDataToEndOfFile()
            guard var text = String(validating: data, as: UTF8.self) else {
                throw MemoError.invalidArgument("standard input is not valid UTF-8")
            }
            if text.hasSuffix("\r\n") {
                text.removeLast()
            } else if text.hasSuffix("\n") {
                text.removeLast()
            }
            return text
        }
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
        store.events.subscribe { event in
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
        if human {
            let server = configuration.server
            client.connectionState.subscribe { state in
                switch state {
                case .reconnecting: err.line("memo-client: connection to \(server) lost; reconnecting")
                case .live: err.line("memo-client: watching \(server) (Ctrl-C stops)")
                case .connecting, .offline: return
                }
                err.flush()
            }
        }
        // A lost connection is made again, but a refused certificate (revoked, expired, another CA) would be
        // refused on every retry: like any other command, watch then stops with exit 5 and the reason.
        let refusals = client.connectionFailure.values.compactMap { failure -> ClientError? in
            guard let failure, ExitCode(failure) == .refused else { return nil }
            return failure
        }
        store.startMirror()
        for await refusal in refusals { throw refusal }
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    // MARK: - import

    private enum ImportOutcome: Sendable {
        case created, unchanged
        case conflict(line: Int, any Error)
        /// Sent, and still unknown when its time was up (retried by id until then).
        case unknown(line: Int, any Error)
        case failed(line: Int, any Error)
    }

    private func importMemos(_ path: String, _ client: MemoConnection) async throws -> ExitCode {
        let name = path == "-" ? "standard input" : path
        let reader = try LineReader(path: path)
        var invalid = 0
        /// The next memo to create, reading (and reporting bad lines) as it goes: the input is never all in memory.
        func nextRecord() throws -> (line: Int, record: MemoJSON.Record)? {
            while let bytes = try reader.next(name: name) {
                let line = reader.lineNumber
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    invalid += 1
                    err.line("memo-client: line \(line): not valid UTF-8")
                    continue
                }
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty { continue }
                do {
                    return (line, try MemoJSON.record(fromLine: trimmed))
                } catch {
                    invalid += 1
                    err.line("memo-client: line \(line): \(ExitCode.message(for: error))")
                }
            }
            return nil
        }
        let baseline = client.serverRevision ?? 0
        var created = 0
        var unchanged = 0
        var conflicts = 0
        var failed = 0
        var unknown = 0
        try await withThrowingTaskGroup(of: ImportOutcome.self) { group in
            func take(_ outcome: ImportOutcome) {
                switch outcome {
                case .created: created += 1
                case .unchanged: unchanged += 1
                case .conflict(let line, let error):
                    conflicts += 1
                    err.line("memo-client: line \(line): \(ExitCode.message(for: error))")
                case .failed(let line, let error):
                    failed += 1
                    err.line("memo-client: line \(line): \(ExitCode.message(for: error))")
                case .unknown(let line, let error):
                    unknown += 1
                    err.line("memo-client: line \(line): \(ExitCode.message(for: error))")
                }
            }
            var inFlight = 0
            while let (line, record) = try nextRecord() {
                if inFlight >= Self.importWindow, let outcome = try await group.next() {
                    inFlight -= 1
                    take(outcome)
                }
                inFlight += 1
                let retry = WriteRetry(deadline: ContinuousClock.now + configuration.requestTimeout)
                group.addTask {
                    do {
                        // By its id, so a create whose outcome is unknown is safely sent again.
                        let memo = try await retry.run { _, timeout in
                            try await client.create(
                                content: record.content, id: record.id, insertMicros: record.insertMicros,
                                updateMicros: record.updateMicros, timeout: timeout)
                        }
                        return memo.revision > baseline ? .created : .unchanged
                    } catch let error as MemoError {
                        if case .conflict = error { return .conflict(line: line, error) }
                        if case .outcomeUnknown = error { return .unknown(line: line, error) }
                        // A read-only certificate is refused for every line alike: one line, exit 5.
                        if case .permissionDenied = error { throw error }
                        return .failed(line: line, error)
                    }
                    // Anything else (unreachable, refused, timed out) stops the import.
                }
            }
            while let outcome = try await group.next() { take(outcome) }
        }
        err.flush()
        if style.json {
            out.line("{\"created\":\(created),\"unchanged\":\(unchanged),\"conflicts\":\(conflicts),"
                + "\"invalid\":\(invalid),\"failed\":\(failed),\"unknown\":\(unknown)}")
        } else if style.human {
            out.line("imported \(created) new, \(unchanged) already there, \(conflicts) conflicts"
                + (invalid + failed > 0 ? ", \(invalid + failed) failed" : "")
                + (unknown > 0 ? ", \(unknown) outcome unknown (may or may not be there)" : ""))
        } else {
            out.line("created \(created)\tunchanged \(unchanged)\tconflicts \(conflicts)\tinvalid \(invalid)"
                + "\tfailed \(failed)" + (unknown > 0 ? "\tunknown \(unknown)" : ""))
        }
        if conflicts > 0 { return .conflict }
        if unknown > 0 { return .outcomeUnknown }
        return invalid + failed > 0 ? .failure : .ok
    }
}
