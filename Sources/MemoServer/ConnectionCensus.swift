import Synchronization

#if DEBUG
/// Counts one connection object in `ServerShared.connectionObjects` and, until its keys are discarded, in
/// `sessionsHoldingKeys`, for the tests that check connections are freed and their keys cleansed. The connection
/// holds it, so the counts drop when the connection is freed. Debug builds only.
final class ConnectionCensus {
    private let server: ServerShared
    private var holdsKeys = true

    init(_ server: ServerShared) {
        self.server = server
        server.connectionObjects.add(1, ordering: .relaxed)
        server.sessionsHoldingKeys.add(1, ordering: .relaxed)
    }

    /// The connection's TLS engine discarded its key material (`stillHeld` false): it no longer counts as holding
    /// keys.
    func keysDiscarded(stillHeld: Bool) {
        guard holdsKeys, !stillHeld else { return }
        holdsKeys = false
        server.sessionsHoldingKeys.subtract(1, ordering: .relaxed)
    }

    deinit {
        server.connectionObjects.subtract(1, ordering: .relaxed)
        if holdsKeys { server.sessionsHoldingKeys.subtract(1, ordering: .relaxed) }
    }
}
#endif
