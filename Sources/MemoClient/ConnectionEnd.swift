import MemoTLS
import MemoWire

/// How a connection ended.
enum ConnectionEnd: Sendable {
    /// No TCP connection: refused, no route, reset during the handshake.
    case unreachable(String)
    /// The server's address is malformed or its name does not resolve.
    case unresolved(String)
    /// The attempt (TCP, TLS and hello) took longer than the connect timeout.
    case timedOut
    /// TLS failed: certificates refused on either side, or a record that did not verify (before or after the
    /// welcome).
    case tlsRefused(TLSError)
    /// The server refused the conversation before welcoming us (`error` or `going-away` in place of `welcome`).
    case rejected(ErrorCode, String)
    /// The connection was lost after the welcome (end of stream, reset, broken TLS, protocol violation).
    case lost(String)
    /// The server answered nothing, not even the keepalive ping, for `seconds` after the ping (a stopped or hung
    /// process: its TCP connection stays up), and we closed the connection.
    case notAnswering(seconds: Double)
    /// We closed it.
    case closedByClient
}

/// What the server said in `welcome`.
struct Welcome: Sendable {
    /// The protocol version the server agreed.
    var version: UInt16 = WireProtocol.minimumVersion
    var revision: UInt64
    var maxFrameSize: UInt32
    var role: Role
    var serverName: String
}

/// How a transport (socket, TLS, frames) ended, before the lifecycle says what that means: the same end of
/// stream is a lost connection after the welcome and an unreachable server before it.
enum TransportEnd: Sendable {
    /// The socket failed (connect, read or write), with the system's reason.
    case io(String)
    /// The server closed the TCP connection.
    case endOfStream
    /// The socket hung up.
    case hangUp
    /// The server sent TLS close_notify.
    case closeNotify
    /// TLS failed: a handshake refused on either side, or a record that did not verify.
    case tls(TLSError)
    /// A frame broke the framing rules (its length over our limit).
    case badFrame(String)
}

extension ConnectionEnd {
    /// What a transport's end means: the same end of stream is a lost connection after the welcome and an
    /// unreachable server before it.
    init(_ end: TransportEnd, afterWelcome ready: Bool) {
        switch end {
        case .io(let text): self = ready ? .lost(text) : .unreachable(text)
        case .endOfStream:
            self = ready ? .lost("the server closed the connection")
                : .unreachable("the server closed the connection during the handshake")
        case .hangUp: self = ready ? .lost("connection hung up") : .unreachable("connection hung up")
        case .closeNotify:
            self = ready ? .lost("the server closed the connection") : .rejected(.shuttingDown, "closed")
        // Before or after the welcome alike: a TLS failure is reported as one (exit 5, with its reason), not as
        // a lost connection to be retried at once.
        case .tls(let error): self = .tlsRefused(error)
        case .badFrame(let text): self = .lost("bad frame from the server: \(text)")
        }
    }

    /// Whether a first connection that ended so is worth another try before its deadline: nobody listening yet,
    /// or a server that is starting, stopping or full. A name that does not resolve, TLS and certificate
    /// failures are not: waiting would only delay the same answer.
    var isWorthRetrying: Bool {
        switch self {
        case .unreachable: return true
        case .rejected(let code, _): return code == .shuttingDown || code == .tooManyConnections
        case .unresolved, .timedOut, .tlsRefused, .lost, .notAnswering, .closedByClient: return false
        }
    }
}
