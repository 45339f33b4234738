import Foundation
import MemoModel
import MemoNet
import MemoTLS
import MemoWire

/// Why a request could not be answered by the server. Answers the server gave (not found, conflict, ...) are
/// thrown as `MemoError` instead, exactly as a local store throws them.
public enum ClientError: Error, Sendable, CustomStringConvertible {
    /// TLS failed or the server refused our certificate (or we refused its).
    case tlsRefused(server: String, TLSError)
    /// No connection could be made: refused, no route, name lookup failed.
    case unreachable(server: String, reason: String)
    /// The request's deadline passed before an answer came.
    case timedOut(server: String, seconds: Double)
    /// The server broke the protocol, or answered with an error that is not a storage error.
    case protocolError(String)
    /// The server answered with an error code that no `MemoError` stands for.
    case server(code: ErrorCode, message: String)
    /// The client was closed.
    case closed

    public var description: String {
        switch self {
        case .tlsRefused(let server, let error):
            return "TLS with \(server) failed: \(error.kind.summary)" + (error.detail.map { " (\($0))" } ?? "")
        case .unreachable(let server, let reason): return "cannot reach \(server): \(reason)"
        case .timedOut(let server, let seconds):
            return "no answer from \(server) within \(Duration.seconds(seconds).secondsText) s"
        case .protocolError(let message): return "protocol error: \(message)"
        case .server(.certificateRevoked, let message): return "certificate revoked: \(message)"
        case .server(let code, let message): return "server error \(code): \(message)"
        case .closed: return "the client is closed"
        }
    }
}

/// A request of a protocol version the server did not agree (an older memo-server): failed before it was sent, the
/// connection kept. A type of its own rather than a `ClientError` case, which callers switch over exhaustively.
public struct ServerTooOldError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `--server` addresses.
    public let server: String
    /// The version the server agreed in its welcome.
    public let speaks: UInt16
    /// The version the request needs.
    public let needs: UInt16

    public var description: String {
        "the server at \(server) speaks protocol version \(speaks), and this request needs version \(needs) (a newer "
            + "memo-server)"
    }
}

extension ClientError {
    /// The error a server's `error` frame stands for: a `MemoError` when it names a storage outcome.
    static func fromServer(code: ErrorCode, message: String, request: Message) -> any Error {
        let id: UUID? = switch request {
        case .get(let id), .update(let id, _, _, _), .delete(let id, _), .history(let id, _, _),
             .restore(let id, _, _): id
        case .create(let id, _, _, _): id
        default: nil
        }
        let expected: UInt64? = switch request {
        case .update(_, let expected, _, _), .delete(_, let expected), .restore(_, _, let expected): expected
        default: nil
        }
        switch code {
        case .notFound:
            guard let id else { return ClientError.server(code: code, message: message) }
            // A version not kept, or a memo not in the trash: the server's reason follows "memo ID: ".
            let prefix = "memo \(id.lowercasedString): "
            if message.hasPrefix(prefix) {
                return MemoError.versionNotFound(id: id, reason: String(message.dropFirst(prefix.count)))
            }
            return MemoError.notFound(id)
        case .conflict:
            guard let id else { return ClientError.server(code: code, message: message) }
            return MemoError.conflict(id: id, expected: expected, actual: Self.actualRevision(in: message) ?? 0)
        case .contentTooLarge:
            if case .create(_, _, _, let content) = request {
                return MemoError.contentTooLarge(size: content.utf8.count, limit: MemoLimits.maxContentBytes)
            }
            if case .update(_, _, let content, _) = request {
                return MemoError.contentTooLarge(size: content.utf8.count, limit: MemoLimits.maxContentBytes)
            }
            return MemoError.invalidArgument(message)
        // The server sends a MemoError's description, which already starts with the words the MemoError's own
        // description adds: without them once, so that "storage error: storage error: ..." is never printed.
        case .invalidRequest: return MemoError.invalidArgument(message.removingPrefix("invalid argument: "))
        case .permissionDenied: return MemoError.permissionDenied(message.removingPrefix("permission denied: "))
        case .storageUnavailable, .internalError: return MemoError.storage(message.removingPrefix("storage error: "))
        case .storageFull: return MemoError.storageFull(message.removingPrefix("storage full: "))
        case .outcomeUnknown: return MemoError.outcomeUnknown(message.removingPrefix("outcome unknown: "))
        default: return ClientError.server(code: code, message: message)
        }
    }

    /// The actual revision from a conflict message ("... is at revision 7, not ..." or "(revision 7)").
    static func actualRevision(in message: String) -> UInt64? {
        guard let range = message.range(of: "revision ") else { return nil }
        let digits = message[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return UInt64(digits)
    }
}

extension String {
    fileprivate func removingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
