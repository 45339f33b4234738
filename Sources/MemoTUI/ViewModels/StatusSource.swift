import MemoCore

/// The state of the connection behind the store.
public enum ConnectionState: Sendable, Hashable {
    /// Connected and subscribed: the list is the server's.
    case live
    /// Connecting for the first time.
    case connecting
    /// Lost the server and trying again; `attempt` counts from 1.
    case reconnecting(attempt: Int)
    /// Not connected; the list shown is the last one received.
    case offline

    /// A short word for the status bar.
    public var label: String {
        switch self {
        case .live: return "live"
        case .connecting: return "connecting"
        case .reconnecting(let attempt): return "reconnecting (\(attempt))"
        case .offline: return "offline, cached"
        }
    }
}

/// What the status bar shows about the store.
public struct ConnectionStatus: Sendable, Hashable {
    /// The server's name (host and port), or "local" for a store in this process.
    public var server: String
    public var state: ConnectionState
    /// Writes sent but not yet acknowledged.
    public var pendingWrites: Int

    public init(server: String, state: ConnectionState, pendingWrites: Int = 0) {
        self.server = server
        self.state = state
        self.pendingWrites = pendingWrites
    }

    /// A store in this process: always live, nothing pending.
    public static let local = ConnectionStatus(server: "local", state: .live)
}

/// Where the connection status comes from: the remote store's connection manager, or a constant.
public protocol StatusSource: Sendable {
    /// The current status, replayed to each subscriber, then every change.
    var status: Subject<ConnectionStatus> { get }
}

/// A status that never changes, for in-memory stores and tests.
public struct ConstantStatus: StatusSource {
    public let status: Subject<ConnectionStatus>

    public init(_ status: ConnectionStatus = .local) {
        self.status = Subject(status)
    }
}
