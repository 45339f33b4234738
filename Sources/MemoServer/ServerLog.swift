import Foundation
import MemoDiagnostics
import MemoModel
import MemoSystem

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
    /// below `level` are left out.
    public static func standardError(format: LogFormat = .text, level: LogLevel = .info) -> ServerLog {
        ServerLog(records: { record in
            guard record.level >= level else { return }
            let time = ServerLog.timestamp()
            let line = switch format {
            case .text: "\(time) \(record.text)\n"
            case .json: record.json(time: time) + "\n"
            }
            // A log that cannot be written has nowhere to report that either.
            try? FileDescriptor.writeAll(STDERR_FILENO, line)
        })
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
