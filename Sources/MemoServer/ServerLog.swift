import Foundation
import MemoDiagnostics
import MemoModel
import MemoSystem
import Synchronization

/// Where the server's log lines go: one line per event, written whole so lines from threads never interleave.
/// Every line is one line: a multi-line message from a library is joined (`singleLine`).
public struct ServerLog: Sendable {
    private let sink: @Sendable (LogRecord) -> Void

    /// A log that hands each record's text line to `sink` (every level).
    public init(_ sink: @escaping @Sendable (String) -> Void) {
        self.sink = { sink($0.text) }
    }

    /// A log that hands over each record, fields and all (every level).
    public init(records sink: @escaping @Sendable (LogRecord) -> Void) {
        self.sink = sink
    }

    /// Lines on standard error, each prefixed with the UTC time (`text`), or JSON objects (`json`); records
    /// below `level` are left out. A thread of its own writes them (`QueuedLineWriter`): a reader of standard error
    /// that stops reading holds no thread that serves clients; past 1 MiB of waiting lines they are dropped, and a
    /// `log_dropped` warning says how many once the reader reads again.
    public static func standardError(format: LogFormat = .text, level: LogLevel = .info) -> ServerLog {
        lines(to: standardErrorLines, format: format, level: level)
    }

    /// Lines for `writer`, formatted as `standardError` formats them (tests give a writer on a pipe of their own).
    static func lines(to writer: QueuedLineWriter, format: LogFormat, level: LogLevel) -> ServerLog {
        // Made once here, not with every line: the writer calls it only when lines were dropped.
        let notice: @Sendable (Int) -> String = { dropped in
            line(LogRecord(
                .warn, "log_dropped", [("lines", "\(dropped)")],
                text: "\(dropped) log lines dropped: standard error was not read while "
                    + "\(writer.capacity / 1024) KiB of lines waited"), format)
        }
        return ServerLog(records: { record in
            guard record.level >= level else { return }
            writer.write(line(record, format), notice: notice)
        })
    }

    private static func line(_ record: LogRecord, _ format: LogFormat) -> String {
        let time = ServerLog.timestamp()
        return switch format {
        case .text: "\(time) \(record.text)\n"
        case .json: record.json(time: time) + "\n"
        }
    }

    /// The writer of every `standardError` log, made on first use; the process waits for it at exit (at most
    /// `exitWaitMillis`: a reader that stopped reading must not hold the exit either).
    static let standardErrorLines: QueuedLineWriter = {
        let writer = QueuedLineWriter(fd: STDERR_FILENO)
        atexit { ServerLog.flushStandardError() }
        standardErrorStarted.store(true, ordering: .releasing)
        return writer
    }()

    private static let standardErrorStarted = Atomic<Bool>(false)

    /// How long the exit waits for standard error's reader to take the lines still waiting.
    public static let exitWaitMillis = 1_000

    /// Waits until the log lines written so far are on standard error, or `exitWaitMillis` pass: before a message
    /// that bypasses the log, so that it comes after them, and at exit.
    public static func flushStandardError() {
        // A process that never logged has no writer to wait for (and starts none for it).
        guard standardErrorStarted.load(ordering: .acquiring) else { return }
        standardErrorLines.flush(until: .now() + .milliseconds(exitWaitMillis))
    }

    /// Text lines on standard error at level info.
    public static let standardError = standardError()

    /// No lines at all.
    public static let silent = ServerLog(records: { _ in })

    /// Logs one record: `text` is the line the text form writes; `fields` what the JSON form adds to it.
    public func callAsFunction(_ level: LogLevel, _ event: String, _ fields: [(String, String)], _ text: String) {
        callAsFunction(LogRecord(level, event, fields, text: text))
    }

    /// Logs one record with no fields but its text.
    public func callAsFunction(_ level: LogLevel, _ event: String, _ text: String) {
        callAsFunction(LogRecord(level, event, [], text: text))
    }

    public func callAsFunction(_ record: LogRecord) {
        var record = record
        record.text = singleLine(record.text)
        record.fields = record.fields.map { ($0.0, singleLine($0.1)) }
        sink(record)
    }

    /// The time as RFC 3339 in UTC with milliseconds, e.g. 2026-12-01T14:06:37.123Z.
    public static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), now.tv_nsec / 1_000_000)
    }
}
