import Dispatch
import Foundation
import Glibc
import MemoClient
import MemoModel
import Synchronization

// memo-client import: line by line, up to `importWindow` creates in flight, errors in line order, a progress line
// on a terminal, a limit on bad lines, a dry run, and a summary however it ends.

extension CommandRunner {
    fileprivate enum ImportOutcome: Sendable {
        case created(line: Int)
        case unchanged(line: Int)
        case conflict(line: Int, any Error)
        case failed(line: Int, any Error)
        /// Sent, and still unknown when its time was up (retried by its id until then).
        case unknown(line: Int, any Error)
        /// The connection failed (unreachable, timed out, refused): the import stops.
        case stop(line: Int, any Error)
    }

    /// Imports `path` ("-": standard input); with no client, a dry run: every line is read and checked, nothing
    /// is sent. Prints the summary however it ends: at the end, after `maxErrors` bad lines, when the connection
    /// fails (then exits with that failure's code), or on SIGINT (with `stopsOnInterrupt`: exit 130).
    func importMemos(_ path: String, maxErrors: Int, _ client: MemoConnection?) async throws -> ExitCode {
        let name = path == "-" ? "standard input" : path
        let reader = try LineReader(path: path)
        let ledger = ImportLedger(
            out: out, err: err, style: style, dryRun: client == nil, quiet: quiet,
            progress: progress ? reader.size : nil, showsProgress: progress)
        let interrupt = stopsOnInterrupt ? ledger.exitOnInterrupt() : nil
        defer { interrupt?.cancel() }
        func limitReached() -> Bool { maxErrors > 0 && ledger.errors >= maxErrors }
        /// The next memo to create, reading (and reporting bad lines) as it goes: the input is never all in memory.
        func nextRecord() throws -> (line: Int, record: MemoJSON.Record)? {
            while !limitReached(), let bytes = try reader.next(name: name) {
                let line = reader.lineNumber
                ledger.showProgress(lines: line, bytes: reader.bytesRead)
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    ledger.bad(line, "not valid UTF-8", as: .invalid)
                    continue
                }
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty { continue }
                do {
                    return (line, try MemoJSON.record(fromLine: trimmed))
                } catch {
                    ledger.bad(line, ExitCode.message(for: error), as: .invalid)
                }
            }
            return nil
        }
        func limitNote() -> String? {
            guard limitReached() else { return nil }
            return "stopped after \(ledger.errors) bad lines (--max-errors \(maxErrors)); "
                + "the lines after line \(reader.lineNumber) were not read"
        }

        guard let client else {
            do {
                while let (line, _) = try nextRecord() { ledger.validated(line) }
            } catch {
                return ledger.finish(note: nil, stop: (reader.lineNumber, error))
            }
            return ledger.finish(note: limitNote(), stop: nil)
        }

        let baseline = client.serverRevision ?? 0
        var stop: (line: Int, error: any Error)?
        await withTaskGroup(of: ImportOutcome.self) { group in
            func take(_ outcome: ImportOutcome) {
                switch outcome {
                case .created(let line): ledger.good(line, created: true)
                case .unchanged(let line): ledger.good(line, created: false)
                case .conflict(let line, let error): ledger.bad(line, ExitCode.message(for: error), as: .conflict)
                case .failed(let line, let error): ledger.bad(line, ExitCode.message(for: error), as: .failed)
                case .unknown(let line, let error): ledger.bad(line, ExitCode.message(for: error), as: .unknown)
                case .stop(let line, let error):
                    // A refusal is an answer; a failed connection leaves the line's outcome unknown.
                    ledger.unanswered(line, answered: error is MemoError)
                    if stop == nil || line < stop!.line { stop = (line, error) }
                }
            }
            var inFlight = 0
            while stop == nil {
                let next: (line: Int, record: MemoJSON.Record)?
                do {
                    next = try nextRecord()
                } catch {
                    stop = (reader.lineNumber, error)
                    break
                }
                guard let (line, record) = next else { break }
                if inFlight >= Self.importWindow, let outcome = await group.next() {
                    inFlight -= 1
                    take(outcome)
                }
                inFlight += 1
                ledger.sent(line)
                let retry = WriteRetry(deadline: ContinuousClock.now + configuration.requestTimeout)
                group.addTask {
                    if let versions = record.versions {
                        return await Self.replay(record, versions: versions, line: line, client, retry: retry)
                    }
                    do {
                        // By its id, so a create whose outcome is unknown is safely sent again.
                        let memo = try await retry.run { _, timeout in
                            try await client.create(
                                content: record.content, id: record.id, insertMicros: record.insertMicros,
                                updateMicros: record.updateMicros, timeout: timeout)
                        }
                        return memo.revision > baseline ? .created(line: line) : .unchanged(line: line)
                    } catch {
                        return Self.outcome(of: error, line: line)
                    }
                }
            }
            while let outcome = await group.next() { take(outcome) }
        }
        return ledger.finish(note: stop == nil ? limitNote() : nil, stop: stop)
    }
}

extension CommandRunner {
    /// Imports a memo with its versions (`export --versions`): a memo already on the server is unchanged when it
    /// holds the line's content, else a conflict; otherwise it is created with the oldest version's content, then
    /// updated to each later one (and last to the line's content), each update expecting the revision the step
    /// before got. Each step is retried as a single write is (by id, by expected revision) until the deadline.
    fileprivate static func replay(
        _ record: MemoJSON.Record, versions: [String], line: Int, _ client: MemoConnection, retry: WriteRetry
    ) async -> ImportOutcome {
        do {
            do {
                let there = try await client.get(id: record.id)
                guard there.content.utf8.elementsEqual(record.content.utf8) else {
                    return .conflict(
                        line: line, MemoError.conflict(id: record.id, expected: nil, actual: there.revision))
                }
                return .unchanged(line: line)
            } catch MemoError.notFound {
                // Not there: replayed below.
            }
            var contents = versions
            if contents.last.map({ !$0.utf8.elementsEqual(record.content.utf8) }) ?? true {
                contents.append(record.content)
            }
            var memo = try await retry.run { _, timeout in
                try await client.create(
                    content: contents[0], id: record.id, insertMicros: record.insertMicros, updateMicros: nil,
                    timeout: timeout)
            }
            for content in contents.dropFirst() where !content.utf8.elementsEqual(memo.content.utf8) {
                let expected = memo.revision
                do {
                    memo = try await retry.run { _, timeout in
                        try await client.update(
                            id: record.id, content: content, expectedRevision: expected, timeout: timeout)
                    }
                } catch MemoError.conflict {
                    // A retried update whose first try landed: the memo holds this content now.
                    let now = try await client.get(id: record.id)
                    guard now.content.utf8.elementsEqual(content.utf8) else { throw MemoError.conflict(
                        id: record.id, expected: expected, actual: now.revision) }
                    memo = now
                }
            }
            return .created(line: line)
        } catch {
            return outcome(of: error, line: line)
        }
    }

    /// What a line's failed write means for the import.
    fileprivate static func outcome(of error: any Error, line: Int) -> ImportOutcome {
        guard let error = error as? MemoError else {
            // Anything else (unreachable, refused, timed out) stops the import.
            return .stop(line: line, error)
        }
        switch error {
        case .conflict: return .conflict(line: line, error)
        case .outcomeUnknown: return .unknown(line: line, error)
        // A read-only certificate is refused for every line alike: the import stops, exit 5.
        case .permissionDenied: return .stop(line: line, error)
        default: return .failed(line: line, error)
        }
    }
}

/// What an import did so far, shared with its SIGINT handler. Every line it prints goes through here under one
/// lock, so that error lines come out in line order (a line's message waits until every earlier line sent has its
/// answer) and an interrupt prints a whole summary.
final class ImportLedger: Sendable {
    enum Bad { case invalid, conflict, failed, unknown }

    private struct State {
        var created = 0
        var unchanged = 0
        var conflicts = 0
        var invalid = 0
        var failed = 0
        /// Sent, retried by id until `--timeout`, and still of unknown outcome.
        var unknown = 0
        /// Dry run: lines that would be sent.
        var valid = 0
        /// Sent and not answered because the connection failed.
        var unanswered = 0
        /// Messages not printed yet, by line: each waits for the lines before it that are in flight.
        var messages: [Int: String] = [:]
        var inFlight: Set<Int> = []
        var lastLine = 0
        var lastProgress: ContinuousClock.Instant?
        var progressShown = false
        var finished = false
    }

    private let state = Mutex(State())
    private let out: BufferedOutput
    private let err: BufferedOutput
    private let style: OutputStyle
    private let dryRun: Bool
    private let quiet: Bool
    private let showsProgress: Bool
    /// The input's size when known, for the percentage and the time left.
    private let size: Int?
    private let started = ContinuousClock.now

    init(out: BufferedOutput, err: BufferedOutput, style: OutputStyle, dryRun: Bool, quiet: Bool, progress size: Int?,
         showsProgress: Bool) {
        self.out = out
        self.err = err
        self.style = style
        self.dryRun = dryRun
        self.quiet = quiet
        self.size = size
        self.showsProgress = showsProgress
    }

    /// Bad lines so far: invalid, conflicting and refused ones.
    var errors: Int { state.withLock { $0.invalid + $0.conflicts + $0.failed } }

    func sent(_ line: Int) {
        state.withLock {
            $0.inFlight.insert(line)
            $0.lastLine = line
        }
    }

    func validated(_ line: Int) {
        state.withLock {
            $0.valid += 1
            $0.lastLine = line
        }
    }

    func good(_ line: Int, created: Bool) {
        state.withLock { state in
            if created { state.created += 1 } else { state.unchanged += 1 }
            state.inFlight.remove(line)
            printReady(&state)
        }
    }

    func unanswered(_ line: Int, answered: Bool) {
        state.withLock { state in
            if !answered { state.unanswered += 1 }
            state.inFlight.remove(line)
            printReady(&state)
        }
    }

    func bad(_ line: Int, _ message: String, as kind: Bad) {
        state.withLock { state in
            switch kind {
            case .invalid: state.invalid += 1
            case .conflict: state.conflicts += 1
            case .failed: state.failed += 1
            case .unknown: state.unknown += 1
            }
            state.inFlight.remove(line)
            state.messages[line] = message
            state.lastLine = max(state.lastLine, line)
            printReady(&state)
        }
    }

    /// Prints, in line order, the messages of lines before the first one still in flight.
    private func printReady(_ state: inout State, all: Bool = false) {
        guard !state.messages.isEmpty else { return }
        let bound = all ? Int.max : state.inFlight.min() ?? Int.max
        let ready = state.messages.keys.filter { $0 < bound }.sorted()
        guard !ready.isEmpty else { return }
        clearProgress(&state)
        for line in ready {
            err.line("memo-client: line \(line): \(state.messages.removeValue(forKey: line)!)")
        }
        err.flush()
    }

    private func clearProgress(_ state: inout State) {
        guard state.progressShown else { return }
        err.write("\r\u{1B}[K")
        state.progressShown = false
    }

    /// `importing: N lines, R lines/s[, P%, eta M:SS]` on stderr, redrawn in place at most twice a second.
    func showProgress(lines: Int, bytes: Int) {
        guard showsProgress else { return }
        state.withLock { state in
            let now = ContinuousClock.now
            if let last = state.lastProgress, now - last < .milliseconds(500) { return }
            state.lastProgress = now
            let elapsed = max((now - started).seconds, 0.001)
            let rate = Double(lines) / elapsed
            var text = "importing: \(lines) lines, \(Int(rate.rounded())) lines/s"
            if let size, size > 0, bytes > 0 {
                let fraction = min(Double(bytes) / Double(size), 1)
                let left = Int((elapsed / fraction - elapsed).rounded())
                text += ", \(Int((fraction * 100).rounded(.down)))%, eta \(left / 60):"
                    + (left % 60 < 10 ? "0" : "") + "\(left % 60)"
            }
            err.write("\r\u{1B}[K" + text)
            err.flush()
            state.progressShown = true
        }
    }

    /// Prints what is left, the reason it ended early (`note`, or the failure that stopped it) and the summary,
    /// once. - Returns: the exit code: the stopping failure's, else 4 for conflicts, 1 for other bad lines, 0.
    func finish(note: String?, stop: (line: Int, error: any Error)?, interrupted: Bool = false) -> ExitCode {
        state.withLock { state in
            guard !state.finished else { return interrupted ? .interrupted : .failure }
            state.finished = true
            printReady(&state, all: true)
            clearProgress(&state)
            var code: ExitCode = state.conflicts > 0 ? .conflict
                : state.unknown > 0 ? .outcomeUnknown
                : state.invalid + state.failed > 0 ? .failure : .ok
            var reason = note
            if let stop {
                code = ExitCode(stop.error)
                reason = ExitCode.message(for: stop.error) + " (import stopped at line \(stop.line))"
            }
            if interrupted {
                code = .interrupted
                reason = "interrupted after line \(state.lastLine)"
            }
            if state.unanswered + state.inFlight.count > 0 {
                reason = (reason ?? "stopped") + "; \(state.unanswered + state.inFlight.count) lines sent got no "
                    + "answer (they may or may not be applied: importing again is safe)"
            }
            if let reason { err.line("memo-client: " + reason) }
            err.flush()
            if !(quiet && code == .ok) { out.line(summary(state)) }
            out.flush()
            return code
        }
    }

    private func summary(_ state: State) -> String {
        if dryRun {
            if style.json { return "{\"valid\":\(state.valid),\"invalid\":\(state.invalid),\"dryRun\":true}" }
            if style.human { return "\(state.valid) lines valid, \(state.invalid) invalid (dry run: nothing sent)" }
            return "valid \(state.valid)\tinvalid \(state.invalid)"
        }
        if style.json {
            return "{\"created\":\(state.created),\"unchanged\":\(state.unchanged),\"conflicts\":\(state.conflicts),"
                + "\"invalid\":\(state.invalid),\"failed\":\(state.failed),\"unknown\":\(state.unknown)}"
        }
        if style.human {
            return "imported \(state.created) new, \(state.unchanged) already there, \(state.conflicts) conflicts"
                + (state.invalid + state.failed > 0 ? ", \(state.invalid + state.failed) failed" : "")
                + (state.unknown > 0 ? ", \(state.unknown) outcome unknown (may or may not be there)" : "")
        }
        return "created \(state.created)\tunchanged \(state.unchanged)\tconflicts \(state.conflicts)\t"
            + "invalid \(state.invalid)\tfailed \(state.failed)" + (state.unknown > 0 ? "\tunknown \(state.unknown)" : "")
    }

    /// On SIGINT: the summary so far, then exit 130. - Returns: the signal source, to cancel when the import ends.
    func exitOnInterrupt() -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [self] in
            exit(finish(note: nil, stop: nil, interrupted: true).rawValue)
        }
        source.setCancelHandler { signal(SIGINT, SIG_DFL) }
        source.resume()
        return source
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
