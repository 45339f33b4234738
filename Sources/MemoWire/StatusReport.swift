import Foundation

/// What a server says about itself in answer to `status`: whether it is ready (and if not, why) and a list of
/// named values, in the order the server gives them. The list describes itself (each value says its type, or that
/// it does not apply), so that a newer server can add names an older client shows without knowing them.
public struct StatusReport: Sendable, Hashable {
    /// Whether the server serves now.
    public var ready: Bool
    /// Why it does not (empty when ready): `store unreachable`, `feed lagging 7.2 s`, `shutting down`, ...
    public var reason: String
    public var fields: [StatusField]

    public init(ready: Bool, reason: String = "", fields: [StatusField]) {
        self.ready = ready
        self.reason = reason
        self.fields = fields
    }

    /// The value named `key`, nil when the report has no such name.
    public subscript(key: String) -> StatusValue? {
        fields.first { $0.key.utf8.elementsEqual(key.utf8) }?.value
    }
}

/// One named value of a status report.
public struct StatusField: Sendable, Hashable {
    public var key: String
    public var value: StatusValue

    public init(_ key: String, _ value: StatusValue) {
        self.key = key
        self.value = value
    }
}

/// A status value: a whole number, a decimal number, text, or "does not apply here" (a PostgreSQL figure on a
/// SQLite server, a rate before any sample).
public enum StatusValue: Sendable, Hashable {
    case none
    case integer(Int64)
    case number(Double)
    case text(String)

    /// The type byte on the wire.
    public enum Tag: UInt8, Sendable {
        case none = 0, integer = 1, number = 2, text = 3
    }

    public var tag: Tag {
        switch self {
        case .none: return .none
        case .integer: return .integer
        case .number: return .number
        case .text: return .text
        }
    }

    /// An optional whole number: `.none` for nil.
    public static func integer<Value: BinaryInteger>(_ value: Value?) -> StatusValue {
        value.map { .integer(Int64(clamping: $0)) } ?? .none
    }

    /// An optional number: `.none` for nil or a value that is not finite.
    public static func number(_ value: Double?) -> StatusValue {
        guard let value, value.isFinite else { return .none }
        return .number(value)
    }

    /// Optional text: `.none` for nil.
    public static func text(_ value: String?) -> StatusValue {
        value.map { .text($0) } ?? .none
    }
}

extension StatusReport {
    /// Appends the payload: `u8 ready`, `string reason`, `u16 count`, then per field `string key`, `u8 type` and
    /// the value (nothing, `i64`, `f64` as its IEEE 754 bits in a `u64`, or `string`).
    func encode(into w: inout WireWriter) {
        w.u8(ready ? 1 : 0)
        w.string(reason)
        w.u16(UInt16(clamping: fields.count))
        for field in fields.prefix(Int(UInt16.max)) {
            w.string(field.key)
            w.u8(field.value.tag.rawValue)
            switch field.value {
            case .none: break
            case .integer(let value): w.i64(value)
            case .number(let value): w.u64(value.bitPattern)
            case .text(let value): w.string(value)
            }
        }
    }

    /// Reads the payload `encode` writes. - Throws: `WireError` for an undefined flag or type, or a short field.
    init(from r: inout WireReader) throws(WireError) {
        let flag = try r.u8("ready flag")
        guard flag <= 1 else { throw .invalidValue(field: "ready flag", value: UInt64(flag)) }
        let reason = try r.string("reason")
        // Each field takes at least a key length and a type byte.
        let count = Int(try r.u16("field count"))
        guard count * 5 <= r.remaining else { throw .countTooLarge(field: "field count", count: UInt64(count)) }
        var fields: [StatusField] = []
        fields.reserveCapacity(count)
        for _ in 0..<count {
            let key = try r.string("field name")
            let rawTag = try r.u8("value type")
            guard let tag = StatusValue.Tag(rawValue: rawTag) else {
                throw .invalidValue(field: "value type", value: UInt64(rawTag))
            }
            let value: StatusValue
            switch tag {
            case .none: value = .none
            case .integer: value = .integer(try r.i64("value"))
            case .number:
                // Only finite numbers: a server sends none for a figure it has not got, and a NaN would not even
                // equal itself (the message fuzzer's decode-encode-decode check found one).
                let bits = try r.u64("value")
                guard Double(bitPattern: bits).isFinite else { throw .invalidValue(field: "value", value: bits) }
                value = .number(Double(bitPattern: bits))
            case .text: value = .text(try r.string("value"))
            }
            fields.append(StatusField(key, value))
        }
        self.init(ready: flag == 1, reason: reason, fields: fields)
    }
}
