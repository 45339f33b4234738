import MemoModel
/// A numbered error code, stable on the wire. Unknown codes decode as themselves so that an older peer can still
/// show a newer peer's message. Ranges: 1xx the frame or protocol, 2xx the request, 3xx limits, 5xx the server.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let malformedFrame = ErrorCode(rawValue: 100)
    public static let frameTooLarge = ErrorCode(rawValue: 101)
    public static let unknownMessageType = ErrorCode(rawValue: 102)
    public static let invalidUTF8 = ErrorCode(rawValue: 103)
    public static let unsupportedVersion = ErrorCode(rawValue: 104)
    public static let helloRequired = ErrorCode(rawValue: 105)
    public static let duplicateRequestID = ErrorCode(rawValue: 106)

    public static let notFound = ErrorCode(rawValue: 200)
    public static let conflict = ErrorCode(rawValue: 201)
    public static let contentTooLarge = ErrorCode(rawValue: 202)
    public static let invalidRequest = ErrorCode(rawValue: 203)
    public static let permissionDenied = ErrorCode(rawValue: 204)
    public static let unknownSubscription = ErrorCode(rawValue: 205)
    /// The client's certificate was revoked while it was connected (sent as going-away).
    public static let certificateRevoked = ErrorCode(rawValue: 206)

    public static let tooManyInFlight = ErrorCode(rawValue: 300)
    public static let slowConsumer = ErrorCode(rawValue: 301)
    public static let tooManyConnections = ErrorCode(rawValue: 302)
    public static let handshakeTimeout = ErrorCode(rawValue: 303)
    public static let frameTimeout = ErrorCode(rawValue: 304)

    public static let internalError = ErrorCode(rawValue: 500)
    public static let storageUnavailable = ErrorCode(rawValue: 501)
    public static let storageFull = ErrorCode(rawValue: 502)
    public static let shuttingDown = ErrorCode(rawValue: 503)
    /// The server fell behind its shared store (its feed lags, or it is below the retained history): it lets its
    /// subscribers go (sent as going-away) and reloads before it serves again.
    public static let lagging = ErrorCode(rawValue: 504)
    /// The write was sent to the store, and then the store's connection broke or timed out: it may or may not
    /// have been applied. Retry a create with its id, an update or delete with its expected revision.
    public static let outcomeUnknown = ErrorCode(rawValue: 505)

    /// Every code this version defines, with its name.
    public static let known: [(ErrorCode, String)] = [
        (.malformedFrame, "malformed-frame"), (.frameTooLarge, "frame-too-large"),
        (.unknownMessageType, "unknown-message-type"), (.invalidUTF8, "invalid-utf8"),
        (.unsupportedVersion, "unsupported-version"), (.helloRequired, "hello-required"),
        (.duplicateRequestID, "duplicate-request-id"),
        (.notFound, "not-found"), (.conflict, "conflict"), (.contentTooLarge, "content-too-large"),
        (.invalidRequest, "invalid-request"), (.permissionDenied, "permission-denied"),
        (.unknownSubscription, "unknown-subscription"), (.certificateRevoked, "certificate-revoked"),
        (.tooManyInFlight, "too-many-in-flight"), (.slowConsumer, "slow-consumer"),
        (.tooManyConnections, "too-many-connections"), (.handshakeTimeout, "handshake-timeout"),
        (.frameTimeout, "frame-timeout"),
        (.internalError, "internal-error"), (.storageUnavailable, "storage-unavailable"),
        (.storageFull, "storage-full"), (.shuttingDown, "shutting-down"), (.lagging, "lagging"),
        (.outcomeUnknown, "outcome-unknown"),
    ]

    public var name: String {
        Self.known.first { $0.0 == self }?.1 ?? "error-\(rawValue)"
    }

    public var description: String { "\(rawValue) \(name)" }
}

extension ErrorCode {
    /// The code a storage error travels as.
    public init(_ error: MemoError) {
        switch error {
        case .notFound, .versionNotFound: self = .notFound
        case .conflict: self = .conflict
        case .contentTooLarge: self = .contentTooLarge
        case .invalidArgument: self = .invalidRequest
        case .permissionDenied: self = .permissionDenied
        case .storage: self = .storageUnavailable
        case .storageFull: self = .storageFull
        case .closed: self = .shuttingDown
        case .historyGone: self = .invalidRequest
        case .unavailable: self = .storageUnavailable
        case .outcomeUnknown: self = .outcomeUnknown
        }
    }
}

/// Why bytes could not be decoded. Each case maps to the error code the server answers with before it closes.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The length prefix is larger than the frame limit (checked before anything is allocated).
    case frameTooLarge(length: UInt32, limit: Int)
    /// The length prefix is too small to hold a frame header.
    case frameTooShort(length: UInt32)
    /// A field runs past the end of the frame.
    case truncated(field: String)
    case unknownMessageType(UInt8)
    case invalidUTF8(field: String)
    /// A field holds a value this version does not define (a flag bit, a kind, a role).
    case invalidValue(field: String, value: UInt64)
    /// A count or length cannot fit in what is left of the frame.
    case countTooLarge(field: String, count: UInt64)
    /// Bytes are left over after the message.
    case trailingBytes(count: Int)

    public var code: ErrorCode {
        switch self {
        case .frameTooLarge: return .frameTooLarge
        case .unknownMessageType: return .unknownMessageType
        case .invalidUTF8: return .invalidUTF8
        case .frameTooShort, .truncated, .invalidValue, .countTooLarge, .trailingBytes: return .malformedFrame
        }
    }

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let limit): return "frame of \(length) bytes is over the limit of \(limit)"
        case .frameTooShort(let length): return "frame length \(length) is shorter than a frame header"
        case .truncated(let field): return "frame ends inside \(field)"
        case .unknownMessageType(let type): return "unknown message type 0x\(String(type, radix: 16))"
        case .invalidUTF8(let field): return "\(field) is not valid UTF-8"
        case .invalidValue(let field, let value): return "\(field) has the undefined value \(value)"
        case .countTooLarge(let field, let count): return "\(field) of \(count) does not fit in the frame"
        case .trailingBytes(let count): return "\(count) bytes left over after the message"
        }
    }
}
