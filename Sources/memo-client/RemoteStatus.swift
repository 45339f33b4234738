import MemoClient
import MemoCore
import MemoTUI
import Synchronization

/// The status bar's view of a `RemoteStore`: the client's connection state and attempt count, the mirror's
/// stale flag and the number of unconfirmed writes, folded into MemoTUI's `ConnectionStatus`.
final class RemoteStatus: StatusSource {
    let status: Subject<ConnectionStatus>
    private let store: RemoteStore
    private let server: String
    private let subscriptions = Mutex<[Subscription]>([])
    /// Held while reading the sources and sending, so that two threads updating at once cannot send an older
    /// status after a newer one (the sources' handlers run on the client's loop thread and on writers' tasks).
    private let sending = Mutex(())

    init(store: RemoteStore) {
        self.store = store
        server = store.client.configuration.server
        status = Subject(Self.current(of: store, server: server))
        let update: @Sendable (Any) -> Void = { [weak self] _ in self?.update() }
        let all = [
            store.connectionState.subscribe { update($0) },
            store.client.connectionAttempts.subscribe { update($0) },
            store.stale.subscribe { update($0) },
            store.pendingWrites.subscribe { update($0) },
        ]
        subscriptions.withLock { $0 = all }
    }

    deinit {
        subscriptions.withLock { $0 }.forEach { $0.cancel() }
    }

    private func update() {
        sending.withLock { _ in
            let next = Self.current(of: store, server: server)
            if status.value != next { status.send(next) }
        }
    }

    /// What the bar says now, from the store's and the client's subjects.
    private static func current(of store: RemoteStore, server: String) -> ConnectionStatus {
        combine(
            server: server, state: store.connectionState.value ?? .connecting,
            attempts: store.client.connectionAttempts.value ?? 0, stale: store.stale.value ?? true,
            pending: store.pendingWrites.value?.count ?? 0)
    }

    /// What the bar says for a client state: live once the mirror has caught up (until then the list may be the
    /// cache's, so "connecting"); a lost connection says which attempt is under way; "offline" is shown while
    /// waiting to try again, with the cached or last list on screen.
    static func combine(
        server: String, state: ClientConnectionState, attempts: Int, stale: Bool, pending: Int
    ) -> ConnectionStatus {
        let shown: MemoTUI.ConnectionState
        switch state {
        case .live: shown = stale ? .connecting : .live
        case .connecting: shown = .connecting
        case .reconnecting: shown = .reconnecting(attempt: max(1, attempts))
        case .offline: shown = .offline
        }
        return ConnectionStatus(server: server, state: shown, pendingWrites: pending)
    }
}
