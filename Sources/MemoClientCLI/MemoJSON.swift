import Foundation
import MemoModel
/// The command line's JSON: one object per memo with the fields `id`, `content`, `insertDate`, `updateDate`
/// (ISO 8601, UTC, microseconds) and `revision`, always in that order.
public enum MemoJSON {
    /// `{"id":"…","content":"…","insertDate":"…","updateDate":"…","revision":N}` on one line; with `author`,
    /// `"author":{"name":"…","serial":"…"}` after the revision (the author of the memo's last change; both empty
    /// when not known).
    public static func object(_ memo: Memo, author: Bool = false) -> String {
        var text = "{\"id\":\"" + memo.id.lowercasedString + "\",\"content\":"
        appendString(memo.content, to: &text)
        text += ",\"insertDate\":\"" + Timestamp.iso8601(micros: memo.insertMicros)
        text += "\",\"updateDate\":\"" + Timestamp.iso8601(micros: memo.updateMicros)
        text += "\",\"revision\":" + String(memo.revision)
        if author { text += ",\"author\":" + object(memo.author) }
        return text + "}"
    }

    /// `{"name":"…","serial":"…"}`.
    public static func object(_ author: Author) -> String {
        var text = "{\"name\":"
        appendString(author.name, to: &text)
        text += ",\"serial\":"
        appendString(author.serial, to: &text)
        return text + "}"
    }

    /// A version for `log --json`: `{"revision":N,"kind":"create"|"update"|"restore","date":"…","author":{…},
    /// "content":"…"}`.
    public static func object(_ version: MemoVersion) -> String {
        var text = "{\"revision\":" + String(version.revision) + ",\"kind\":\"" + version.kind.name
        text += "\",\"date\":\"" + Timestamp.iso8601(micros: version.micros) + "\",\"author\":"
        text += object(version.author) + ",\"content\":"
        appendString(version.content, to: &text)
        return text + "}"
    }

    /// A version for `log --json --patch`: the version's object with `"patch":"…"` last (its difference from the
    /// version before, as `diff -u` prints it; empty when the content is the same).
    public static func object(_ version: MemoVersion, patch: String) -> String {
        var text = String(object(version).dropLast()) + ",\"patch\":"
        appendString(patch, to: &text)
        return text + "}"
    }

    /// A memo for `export --versions`: the memo's object (with its author) and `"versions":[…]`, its kept
    /// versions newest first as `log --json` prints them.
    public static func object(_ memo: Memo, versions: [MemoVersion]) -> String {
        String(object(memo, author: true).dropLast()) + ",\"versions\":["
            + versions.map { object($0) }.joined(separator: ",") + "]}"
    }

    /// A trash entry for `trash --json`: `{"id":"…","revision":N,"deletedDate":"…","deletedBy":{…},
    /// "insertDate":"…","content":"…"}` (the delete's revision and date, who deleted it, the memo's last content).
    public static func object(_ entry: TrashEntry) -> String {
        var text = "{\"id\":\"" + entry.memo.id.lowercasedString + "\",\"revision\":" + String(entry.revision)
        text += ",\"deletedDate\":\"" + Timestamp.iso8601(micros: entry.deletedMicros) + "\",\"deletedBy\":"
        text += object(entry.deletedBy) + ",\"insertDate\":\"" + Timestamp.iso8601(micros: entry.memo.insertMicros)
        text += "\",\"content\":"
        appendString(entry.memo.content, to: &text)
        return text + "}"
    }

    /// `{"type":"created"|"updated"|"deleted","revision":N,"memo":{…}}` on one line.
    public static func object(_ change: Change) -> String {
        event(type: change.kind.name, revision: change.revision, memo: change.memo)
    }

    /// A watch line: `{"type":TYPE,"revision":N,"memo":{…}}`; `existing` for a memo that was there when the watch
    /// began, so that the first list and the changes after it have one shape.
    public static func event(type: String, revision: UInt64, memo: Memo) -> String {
        "{\"type\":\"" + type + "\",\"revision\":" + String(revision) + ",\"memo\":" + object(memo) + "}"
    }

    /// Appends `value` as a JSON string: quotes, backslashes and control characters escaped, the rest as is.
    public static func appendString(_ value: String, to text: inout String) {
        text += "\""
        var plainStart = value.unicodeScalars.startIndex
        var index = plainStart
        let scalars = value.unicodeScalars
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            case "\u{08}": escape = "\\b"
            case "\u{0C}": escape = "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    escape = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    escape = nil
                }
            }
            if let escape {
                text.unicodeScalars.append(contentsOf: scalars[plainStart..<index])
                text += escape
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        text.unicodeScalars.append(contentsOf: scalars[plainStart..<scalars.endIndex])
        text += "\""
    }

    /// One memo read back from an `export` line.
    public struct Record: Sendable, Hashable {
        public var id: UUID
        public var content: String
        public var insertMicros: Int64
        public var updateMicros: Int64?
        public var revision: UInt64?
        /// The contents of the memo's kept versions, oldest first (`export --versions`); nil without them.
        public var versions: [String]? = nil
    }

    private struct RawVersion: Decodable {
        var revision: UInt64
        var content: String
    }

    private struct RawRecord: Decodable {
        var id: String
        var content: String
        var insertDate: String
        var updateDate: String?
        var revision: UInt64?
        var versions: [RawVersion]?
    }

    /// Reads one line of `export` output.
    /// - Throws: `MemoError.invalidArgument` saying what is wrong with the line.
    public static func record(fromLine line: String) throws(MemoError) -> Record {
        let raw: RawRecord
        do {
            raw = try JSONDecoder().decode(RawRecord.self, from: Data(line.utf8))
        } catch let DecodingError.keyNotFound(key, _) {
            throw .invalidArgument("missing field \"\(key.stringValue)\"")
        } catch {
            throw .invalidArgument("not a memo object (\(Self.reason(error)))")
        }
        guard let id = UUID(uuidString: raw.id) else { throw .invalidArgument("id \"\(raw.id)\" is not a UUID") }
        guard let insert = Timestamp.parse(raw.insertDate) else {
            throw .invalidArgument("insertDate \"\(raw.insertDate)\" is not an ISO 8601 time")
        }
        var update: Int64?
        if let text = raw.updateDate {
            guard let micros = Timestamp.parse(text) else {
                throw .invalidArgument("updateDate \"\(text)\" is not an ISO 8601 time")
            }
            update = micros
            // Said here, in the line's own words: the server would give the dates as microseconds.
            if micros < insert { throw .invalidArgument("updateDate \"\(text)\" is before insertDate \"\(raw.insertDate)\"") }
        }
        try MemoLimits.validate(content: raw.content)
        var versions: [String]?
        if let raw = raw.versions, !raw.isEmpty {
            // Newest first in the file, as log --json prints them; replayed oldest first.
            let ordered = raw.sorted { $0.revision < $1.revision }
            for version in ordered { try MemoLimits.validate(content: version.content) }
            versions = ordered.map(\.content)
        }
        return Record(
            id: id, content: raw.content, insertMicros: insert, updateMicros: update, revision: raw.revision,
            versions: versions)
    }

    /// Why a line did not decode, in JSON's words: Foundation's own text names Swift types
    /// ("Dictionary<String, Any>") and error domains, which mean nothing to someone fixing an export file.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "expected \(jsonName(type))" : "field \"\(path)\" should be \(jsonName(type))"
        case DecodingError.valueNotFound(let type, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "expected \(jsonName(type))" : "field \"\(path)\" is null, not \(jsonName(type))"
        case DecodingError.dataCorrupted:
            return "not valid JSON"
        default:
            return "not valid JSON"
        }
    }

    private static func jsonName(_ type: Any.Type) -> String {
        if type == String.self { return "a string" }
        if type == UInt64.self || type == Int64.self || type == Int.self { return "a whole number" }
        if type == Bool.self { return "true or false" }
        if type is [Any].Type { return "a JSON array" }
        return "a JSON object"
    }
}
