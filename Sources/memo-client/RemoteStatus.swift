import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoTLS
import MemoTUI
import MemoViewModels
import MemoWire

/// The status bar's view of a `RemoteStore`: the client's connection state, attempt count, last failure and role,
/// the mirror's stale flag and the unconfirmed writes, folded into MemoTUI's `ConnectionStatus`; and the queued
/// writes the server refused, as MemoTUI's `WriteRefusal`.
///
/// The sources' handlers run on the client's loop (and on writers' tasks); each asks the front end's loop to
/// recompute the status from the sources' latest values and send it if it changed. One loop does every update, in
/// turn, so an older status is never sent after a newer one, with no lock.
final class RemoteStatus: StatusSource {
    let status: Subject<ConnectionStatus>
    let refusals = Subject<WriteRefusal>()
    /// The store's not-saved list (nil without an offline queue).
    let notSaved: (any NotSavedSource)?
    private let subscriptions: [Subscription]

    init(store: RemoteStore) {
        notSaved = store.queuePath == nil ? nil : RemoteNotSaved(store: store)
        let server = store.client.configuration.server
        let status = Subject(Self.current(of: store, server: server))
        self.status = status
        // Only a client without keepalive pings needs the writes' silence to tell a stopped server.
        let unanswered = store.client.configuration.keepalive == nil ? UnansweredWrites() : nil
        let update: @Sendable (Any) -> Void = { _ in
            FrontEnd.hop { Self.recompute(status, store, server, unanswered) }
        }
        let refusals = refusals
        subscriptions = [
            store.connectionState.subscribe { update($0) },
            store.client.connectionAttempts.subscribe { update($0) },
            store.client.connectionFailure.subscribe { update($0 as Any) },
            store.role.subscribe { update($0 as Any) },
            store.queueProblem.subscribe { update($0 as Any) },
            store.stale.subscribe { update($0) },
            store.pendingWrites.subscribe { update($0) },
            store.refusals.subscribe { refusals.send(Self.refusal($0)) },
        ]
    }

    deinit {
        subscriptions.forEach { $0.cancel() }
    }

    /// With `--keepalive 0` nothing pings a live connection, and a stopped server (SIGSTOP, a hung process) keeps
    /// its TCP connection up: a write unanswered this long (what the default keepalive takes to give up on a
    /// silent server) makes the bar say `unconfirmed (server not answering)` instead of `live`.
    static let unansweredAfter = ClientConfiguration.defaultKeepalive * 2

    /// Sends what the bar says now, if it changed (on the front end's loop, so in order).
    @FrontEnd
    private static func recompute(
        _ status: Subject<ConnectionStatus>, _ store: RemoteStore, _ server: String, _ unanswered: UnansweredWrites?
    ) {
        var next = current(of: store, server: server)
        if let unanswered, unanswered.waited(
            live: next.state == .live, pending: next.pendingIDs, after: unansweredAfter,
            recheck: { recompute(status, store, server, unanswered) })
        {
            next.state = .unconfirmed
            next.reason = .notAnswering
        }
        if status.value != next { status.send(next) }
    }

    /// What the bar says now, from the store's and the client's subjects.
    private static func current(of store: RemoteStore, server: String) -> ConnectionStatus {
        let failure = store.client.connectionFailure.value ?? nil
        var status = combine(
            server: server, state: store.connectionState.value ?? .connecting,
            attempts: store.client.connectionAttempts.value ?? 0, stale: store.stale.value ?? true,
            pending: store.pendingWrites.value ?? [], failure: failure)
        // The role from the server's welcome, or remembered with the cache: read-only offline too.
        status.readOnly = (store.role.value ?? nil) == .readOnly
        if let queueProblem = store.queueProblem.value ?? nil {
            status.problem = ConnectionProblem(kind: .writesNotOnDisk, detail: queueProblem)
        } else {
            status.problem = failure.flatMap(problem(of:))
        }
        status.hasList = store.hasList
        return status
    }

    /// What the bar says for a client state: live once the mirror has caught up (until then the list may be the
    /// cache's, so "connecting"); a lost connection says which attempt is under way and why the last one failed
    /// ("reconnecting (connection refused, try 3)"); "offline" is shown while waiting to try again, with the cached
    /// or last list on screen and the same reason. A connection lost because the server did not answer in time
    /// (the keepalive ping, or a connection attempt that went nowhere) says so: "reconnecting (server not
    /// answering, try 3)".
    static func combine(
        server: String, state: ConnectionState, attempts: Int, stale: Bool, pending: Set<UUID>,
        failure: ClientError? = nil
    ) -> ConnectionStatus {
        let shown: LinkState
        switch state {
        case .live: shown = stale ? .connecting : .live
        case .connecting: shown = .connecting
        case .reconnecting:
            if case .timedOut? = failure {
                shown = .notAnswering(attempt: max(1, attempts))
            } else {
                shown = .reconnecting(attempt: max(1, attempts))
            }
        case .offline: shown = .offline
        }
        return ConnectionStatus(server: server, state: shown, pendingIDs: pending, reason: failure.flatMap(reason(of:)))
    }

    /// The few words in brackets after the state: the last failure, when retrying may fix it (the ones it will
    /// not fix are problems, shown in their place).
    static func reason(of failure: ClientError) -> LinkReason? {
        switch failure {
        case .unreachable(_, let reason): return .said(reason)
        case .timedOut: return .notAnswering
        case .server(let code, let message): return .said(message.isEmpty ? "\(code)" : message)
        case .protocolError: return .said("protocol error")
        case .tlsRefused, .closed: return nil
        }
    }

    /// A failure that retrying will not fix, in the bar's words: TLS and certificates. Nil for the rest (a server
    /// that is down is "offline", and retrying will find it when it is back).
    static func problem(of failure: ClientError) -> ConnectionProblem? {
        if case .server(.certificateRevoked, _) = failure {
            return ConnectionProblem(kind: .certificateRevoked, detail: failure.description)
        }
        guard case .tlsRefused(_, let error) = failure else { return nil }
        let certificateKinds: Set<TLSError.Kind> = [
            .unknownCA, .certificateExpired, .certificateRevoked, .certificateNotYetValid, .certificateRejected,
            .noClientCertificate,
        ]
        let kind: ConnectionProblem.Kind
        if error.verifyResult != nil {
            // We checked the server's certificate and it failed.
            kind = error.kind == .unknownCA ? .serverNotTrusted : .tls("the server's " + error.kind.summary)
        } else if error.kind == .certificateRevoked {
            kind = .certificateRevoked
        } else if certificateKinds.contains(error.kind) {
            // The server's alert: it checked ours and refused it.
            kind = .certificateRefused
        } else {
            kind = .tls(error.kind.summary)
        }
        return ConnectionProblem(kind: kind, detail: failure.description)
    }

    /// A refused queued write in the front end's terms.
    static func refusal(_ refused: RefusedWrite) -> WriteRefusal {
        WriteRefusal(
            kind: kind(of: refused.write), memo: refused.write.memo, baseRevision: refused.write.expectedRevision,
            isConflict: refused.isConflict, theirs: refused.theirs, reason: refused.reason,
            notSavedID: refused.notSavedID)
    }

    /// A queued write's kind in the front end's terms.
    static func kind(of write: QueuedWrite) -> WriteRefusal.Kind {
        switch write.kind {
        case .create: return .create
        case .update: return .update
        case .delete: return .delete
        }
    }
}

/// How long the unconfirmed writes of a live connection have gone without an answer: since the first of them was
/// sent, or since the server last confirmed one (an answer shows it is there).
@FrontEnd
final class UnansweredWrites {
    nonisolated init() {}

    private var previous: Set<UUID> = []
    private var since: ContinuousClock.Instant?
    private var timer: TimerHandle?

    /// Notes the writes not yet confirmed; true when they have waited `after` with none confirmed. Calls `recheck`
    /// (on the front end's loop) when that time comes, if nothing changed before.
    func waited(
        live: Bool, pending: Set<UUID>, after: Duration, recheck: @escaping @FrontEnd @Sendable () -> Void
    ) -> Bool {
        defer { previous = live ? pending : [] }
        guard live, !pending.isEmpty else {
            since = nil
            timer?.cancel()
            timer = nil
            return false
        }
        let now = ContinuousClock.now
        if since == nil || !pending.isSuperset(of: previous) {
            since = now
            timer?.cancel()
            timer = nil
        }
        let waited = now - since!
        guard waited < after else { return true }
        if timer == nil {
            timer = FrontEnd.loop.schedule(after: after - waited) { [weak self] in
                FrontEnd.assumeIsolated {
                    self?.timer = nil
                    recheck()
                }
            }
        }
        return false
    }
}
