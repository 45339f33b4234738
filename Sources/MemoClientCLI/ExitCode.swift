import MemoClient
import MemoCore
import MemoTLS
import MemoWire

/// The command line's exit codes (documented in `memo-client --help`).
public enum ExitCode: Int32, Sendable, CaseIterable {
    case ok = 0
    /// Any other error.
    case failure = 1
    /// The command line was used wrongly.
    case usage = 2
    /// No memo has that id (or prefix).
    case notFound = 3
    /// A revision mismatch, a create reusing an id for other content, or an ambiguous id prefix.
    case conflict = 4
    /// TLS failed or the certificate was refused (or is read-only for a write).
    case refused = 5
    /// The server could not be reached, or did not answer in time a request that was not a write already sent.
    case unreachable = 6
    /// A write was sent and its answer never came (the connection or the server's store broke or timed out
    /// meanwhile): it may or may not have been applied.
    case outcomeUnknown = 7

    public var meaning: String {
        switch self {
        case .ok: return "success"
        case .failure: return "any other error"
        case .usage: return "usage error (unknown command or option, missing argument)"
        case .notFound: return "no memo with that id or prefix"
        case .conflict: return "conflict: revision mismatch (--if-revision), id reused, or ambiguous id prefix"
        case .refused: return "TLS failed or the certificate was refused (read-only certificates may not write)"
        case .unreachable:
            return "server unreachable (a refused connection is retried until --timeout), or timed out before a "
                + "write was sent"
        case .outcomeUnknown:
            return "outcome unknown: a write was sent but its answer never came (retried until --timeout); it may "
                + "or may not be applied"
        }
    }

    /// The exit code an error stands for.
    public init(_ error: any Error) {
        switch error {
        case let error as MemoError:
            switch error {
            case .notFound: self = .notFound
            case .conflict: self = .conflict
            case .permissionDenied: self = .refused
            case .unavailable: self = .unreachable
            case .outcomeUnknown: self = .outcomeUnknown
            default: self = .failure
            }
        case let error as ClientError:
            switch error {
            case .tlsRefused: self = .refused
            case .unreachable, .timedOut: self = .unreachable
            case .server(let code, _):
                switch code {
                case .shuttingDown, .tooManyConnections, .handshakeTimeout, .frameTimeout: self = .unreachable
                case .certificateRevoked: self = .refused
                case .outcomeUnknown: self = .outcomeUnknown
                case .lagging: self = .unreachable
                default: self = .failure
                }
            case .protocolError, .closed: self = .failure
            }
        case is TLSError: self = .refused
        case let error as IDLookupError:
            switch error {
            case .notFound: self = .notFound
            case .ambiguous: self = .conflict
            }
        case is CommandUsageError: self = .usage
        default: self = .failure
        }
    }
}

/// A memo id given on the command line that matches no memo, or more than one.
public enum IDLookupError: Error, Sendable, CustomStringConvertible {
    case notFound(String)
    case ambiguous(String, matches: [String])

    public var description: String {
        switch self {
        case .notFound(let prefix): return "no memo has an id starting with \(prefix)"
        case .ambiguous(let prefix, let matches):
            let shown = matches.prefix(5).joined(separator: ", ") + (matches.count > 5 ? ", ..." : "")
            return "id prefix \(prefix) matches \(matches.count) memos (\(shown)); give more of the id"
        }
    }
}

/// A command that cannot run as given (found while running, such as `add -` with nothing on stdin).
public struct CommandUsageError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension ExitCode {
    /// One clear line for stderr (without the program name).
    /// - Parameter certificatesOrigin: which certificate folder was used and why, named when a file is missing.
    public static func message(for error: any Error, certificatesOrigin: String? = nil) -> String {
        switch error {
        case let error as TLSError:
            if error.kind == .fileSystem {
                let origin = certificatesOrigin.map { "; \($0)" } ?? ""
                return "\(error.detail ?? error.description) (give --certs DIR, MEMO_CERTS, or --ca/--cert/--key"
                    + origin + ")"
            }
            return "cannot use the certificates: \(error.description)"
        case MemoError.outcomeUnknown(let message):
            // Whatever the server or the library said, the line says what it means for the user.
            let meaning = message.contains("may or may not") ? "" : "; the write may or may not have been applied"
            return "outcome unknown: " + message + meaning
        case let error as CustomStringConvertible:
            return error.description
        default:
            return "\(error)"
        }
    }
}
