import Foundation
import MemoModel
/// The state of the connection behind the store, as the status bar shows it (MemoClient has its own
/// `ConnectionState`, the connection's; the front end maps one onto the other).
public enum LinkState: Sendable, Hashable {
    /// Connected and subscribed: the list is the server's.
    case live
    /// Connecting for the first time.
    case connecting
    /// Lost the server and trying again; `attempt` counts from 1.
    case reconnecting(attempt: Int)
    /// The server stopped answering (a keepalive ping or a connection attempt went unanswered: a hung or stopped
    /// process keeps its TCP connection up), and the connection is being made again; `attempt` counts from 1.
    case notAnswering(attempt: Int)
    /// Not connected; the list shown is the last one received.
    case offline
    /// Connected, but a write has gone unanswered for a while and nothing else checks the connection (the client
    /// runs with `--keepalive 0`): the server may have stopped, the list may be behind.
    case unconfirmed

    /// The state in the status bar's one vocabulary, with `reason` (why the link is down) where one is known:
    /// `live`, `connecting`, `reconnecting (connection refused, try 3)`, `reconnecting (server not answering,
    /// try 3)`, `offline (connection refused)`.
    public func label(_ strings: Strings, reason: LinkReason? = nil) -> String {
        let because = reason?.text(strings)
        switch self {
        case .live: return strings.live
        case .connecting: return strings.connecting(because)
        case .reconnecting(let attempt): return strings.reconnecting(attempt, because)
        case .notAnswering(let attempt): return strings.reconnecting(attempt, strings.serverNotAnswering)
        case .offline: return strings.offline(because)
        case .unconfirmed: return strings.unconfirmed(strings.serverNotAnswering)
        }
    }
}

/// Why the link is down, when retrying may fix it: the status bar says it in brackets after the state.
public enum LinkReason: Sendable, Hashable {
    /// The server did not answer in time (a ping or a connection attempt).
    case notAnswering
    /// In the system's or the server's words, lower case: "connection refused", "the server closed the
    /// connection".
    case said(String)

    public func text(_ strings: Strings) -> String {
        switch self {
        case .notAnswering: return strings.serverNotAnswering
        case .said(let words): return words
        }
    }
}

/// Why the connection cannot be made, when retrying alone will not fix it (a certificate, TLS).
public struct ConnectionProblem: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Our CA did not sign the server's certificate.
        case serverNotTrusted
        /// The server refused our certificate.
        case certificateRefused
        /// The server refused our certificate because its CA revoked it.
        case certificateRevoked
        /// Another TLS failure, with its short summary.
        case tls(String)
        /// The offline write queue cannot be written to disk (a full disk): the writes stay in memory, pending.
        case writesNotOnDisk
    }

    public var kind: Kind
    /// The whole message, as the command line would print it (`?` shows it).
    public var detail: String

    public init(kind: Kind, detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The short form for the status bar.
    public func summary(_ strings: Strings) -> String {
        switch kind {
        case .serverNotTrusted: return strings.serverNotTrusted
        case .certificateRefused: return strings.certificateRefused
        case .certificateRevoked: return strings.certificateRevoked
        case .tls(let summary): return strings.tlsFailed(summary)
        case .writesNotOnDisk: return strings.writesNotOnDisk
        }
    }
}

/// What the status bar shows about the store.
public struct ConnectionStatus: Sendable, Hashable {
    /// The server's name (host and port), or "local" for a store in this process.
    public var server: String
    public var state: LinkState
    /// Writes not yet confirmed by the server (made offline, or sent and not yet answered).
    public var pendingWrites: Int { pendingIDs.count }
    /// The memos with writes not yet confirmed, for a mark on their rows.
    public var pendingIDs: Set<UUID>
    /// The server said (in its welcome) that our certificate may only read.
    public var readOnly: Bool
    /// Why the connection fails, when it is a reason retrying will not fix.
    public var problem: ConnectionProblem?
    /// Whether the store has a list to show: false with no cache and no answer from the server yet.
    public var hasList: Bool
    /// Why the link is not live, in a few words ("connection refused"), when it is known and retrying may fix it;
    /// the status bar puts it in brackets after the state.
    public var reason: LinkReason?

    public init(
        server: String, state: LinkState, pendingIDs: Set<UUID> = [], readOnly: Bool = false,
        problem: ConnectionProblem? = nil, hasList: Bool = true, reason: LinkReason? = nil
    ) {
        self.server = server
        self.state = state
        self.pendingIDs = pendingIDs
        self.readOnly = readOnly
        self.problem = problem
        self.hasList = hasList
        self.reason = reason
    }

    /// The state with its reason, as the status bar and the help box say it.
    public func stateLabel(_ strings: Strings) -> String {
        if let problem, state != .live { return problem.summary(strings) }
        return state.label(strings, reason: state == .live ? nil : reason)
    }

    /// A store in this process: always live, nothing pending.
    public static let local = ConnectionStatus(server: "local", state: .live)
}

/// A write the server refused after the screen had shown it (it was made offline and sent on reconnect): the
/// store has rolled it back; the front end says why, and offers the conflict choice for an edit.
public struct WriteRefusal: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case create, update, delete
    }

    public var kind: Kind
    /// The memo as the write made it (our content).
    public var memo: Memo
    /// The revision the write started from.
    public var baseRevision: UInt64?
    /// True for a conflict (someone else changed or deleted it first).
    public var isConflict: Bool
    /// Their version after a conflict; nil when they deleted it.
    public var theirs: Memo?
    /// The server's reason, as one line.
    public var reason: String
    /// The entry the store keeps for it in the not-saved list, if any: resolving the conflict in the editor (a
    /// save that lands, or "keep theirs") removes it.
    public var notSavedID: UUID?

    public init(
        kind: Kind, memo: Memo, baseRevision: UInt64?, isConflict: Bool, theirs: Memo?, reason: String,
        notSavedID: UUID? = nil
    ) {
        self.notSavedID = notSavedID
        self.kind = kind
        self.memo = memo
        self.baseRevision = baseRevision
        self.isConflict = isConflict
        self.theirs = theirs
        self.reason = reason
    }
}

/// Where the connection status comes from: the remote store's connection manager, or a constant.
public protocol StatusSource: Sendable {
    /// The current status, replayed to each subscriber, then every change.
    var status: Subject<ConnectionStatus> { get }
    /// Writes refused after they were shown (no replay).
    var refusals: Subject<WriteRefusal> { get }
    /// The refused writes kept for the user (`!` on the list); nil when the store keeps none.
    var notSaved: (any NotSavedSource)? { get }
}

extension StatusSource {
    /// A store without an offline queue keeps no not-saved list.
    public var notSaved: (any NotSavedSource)? { nil }
}

/// A status that never changes, for in-memory stores and tests.
public struct ConstantStatus: StatusSource {
    public let status: Subject<ConnectionStatus>
    public let refusals = Subject<WriteRefusal>()

    public init(_ status: ConnectionStatus = .local) {
        self.status = Subject(status)
    }
}
