import Foundation
import MemoClient
import MemoModel
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
    /// `status`: a server answered that it is not ready (shutting down, its store unreachable or lagging).
    case notReady = 8
    /// Interrupted (SIGINT) during an import, after printing its summary.
    case interrupted = 130

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
        case .notReady: return "status: a server answered that it is not ready (the reason is in its row)"
        case .interrupted: return "interrupted (Ctrl-C) during an import, after printing what it did"
        }
    }

    /// The exit code an error stands for.
    public init(_ error: any Error) {
        switch error {
        case let error as MemoError:
            switch error {
            case .notFound, .versionNotFound: self = .notFound
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
    /// - Parameters:
    ///   - certificatesOrigin: which certificate folder was used and why, named when a file is missing.
    ///   - certificates: the CA and client certificate files, named when one side refused the other's certificate.
    public static func message(
        for error: any Error, certificatesOrigin: String? = nil, certificates: (ca: String, own: String)? = nil
    ) -> String {
        withoutDoubledPrefixes(rawMessage(for: error, certificatesOrigin: certificatesOrigin, certificates: certificates))
    }

    private static func rawMessage(
        for error: any Error, certificatesOrigin: String?, certificates: (ca: String, own: String)?
    ) -> String {
        switch error {
        case let error as TLSError:
            if error.kind == .fileSystem {
                let origin = certificatesOrigin.map { "; \($0)" } ?? ""
                return "\(error.detail ?? error.description) (give --certs DIR, MEMO_CERTS, or --ca/--cert/--key"
                    + origin + ")"
            }
            return "cannot use the certificates: \(error.description)"
        case ClientError.tlsRefused(_, let tls)
        where tls.kind == .openSSL || tls.kind == .fileSystem
            || (tls.kind == .invalidArgument && tls.operation == "setting up the TLS client"):
            // A certificate, key or CA file read only when a full handshake needed it (a saved session was
            // offered and not resumed) that did not load: said as when it is loaded at start.
            return rawMessage(for: tls, certificatesOrigin: certificatesOrigin, certificates: certificates)
        case MemoError.outcomeUnknown(let message):
            // Whatever the server or the library said, the line says what it means for the user.
            let meaning = message.contains("may or may not") ? "" : "; the write may or may not have been applied"
            return "outcome unknown: " + message + meaning
        case ClientError.tlsRefused(let server, let tls) where tls.kind == .unknownCA:
            // Two different fixes: which side's CA does not match is said apart.
            if tls.isPeersVerdict {
                return "TLS with \(server) failed: the server refused your certificate: it is not signed by a CA the "
                    + "server trusts" + (certificates.map { " (\($0.own))" } ?? "")
            }
            return "TLS with \(server) failed: the server's certificate is not signed by your CA"
                + (certificates.map { " (\($0.ca))" } ?? "")
        case ClientError.tlsRefused(let server, let tls) where tls.isPeersVerdict:
            // The server's alert is its verdict on this client's certificate: said as such, with the file and the fix.
            let why: String
            switch tls.kind {
            case .certificateRevoked: why = "it has been revoked"
            case .certificateExpired: why = "it has expired"
            case .certificateNotYetValid: why = "it is not valid yet"
            case .noClientCertificate: why = "none was sent"
            default: why = tls.kind.summary
            }
            let fix = [TLSError.Kind.certificateRevoked, .certificateExpired].contains(tls.kind)
                ? "; ask the server's operator for a new one" : ""
            return "TLS with \(server) failed: the server refused your certificate: \(why)"
                + (certificates.map { " (\($0.own))" } ?? "") + fix
        case let error as CustomStringConvertible:
            return error.description
        default:
            return "\(error)"
        }
    }

    /// The message with a part said twice in a row said once: the server's `invalid argument: ...` wrapped again
    /// as the client's `invalid argument: ...` reads `invalid argument: invalid argument: ...`.
    static func withoutDoubledPrefixes(_ message: String) -> String {
        let parts = message.components(separatedBy: ": ")
        guard parts.count > 2 else { return message }
        // The last part is the message itself, kept whatever it says.
        var kept: [String] = [parts[0]]
        for part in parts.dropFirst().dropLast() where part != kept.last { kept.append(part) }
        kept.append(parts[parts.count - 1])
        return kept.joined(separator: ": ")
    }
}
