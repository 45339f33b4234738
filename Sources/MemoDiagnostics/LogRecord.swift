import Foundation

/// How much the log says: a record is written when its level is at least the log's.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warn, error

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warn: "warn"
        case .error: "error"
        }
    }

    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// How a log line is written: `text` (the time, then the line) or `json` (one object per line).
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// One thing the server logs: its level, a stable event name (README lists them), the fields a program reads
/// (`conn`, `peer`, `cn`, `reason`, ...) and the line the text form writes, as it always has.
public struct LogRecord: Sendable {
    public var level: LogLevel
    public var event: String
    public var fields: [(String, String)]
    public var text: String

    public init(_ level: LogLevel, _ event: String, _ fields: [(String, String)] = [], text: String) {
        self.level = level
        self.event = event
        self.fields = fields
        self.text = text
    }

    /// The record as one JSON object on one line: `time`, `level`, `event`, the fields, then `message` (the text
    /// line). A field that repeats a leading key keeps the first.
    public func json(time: String) -> String {
        var out = "{\"time\":" + Self.quoted(time) + ",\"level\":" + Self.quoted(level.name) + ",\"event\":"
            + Self.quoted(event)
        var seen: Set<String> = ["time", "level", "event", "message"]
        for (key, value) in fields where seen.insert(key).inserted {
            out += "," + Self.quoted(key) + ":" + Self.quoted(value)
        }
        out += ",\"message\":" + Self.quoted(text) + "}"
        return out
    }

    /// A JSON string: quotes, backslashes and control characters escaped, everything else as UTF-8.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
