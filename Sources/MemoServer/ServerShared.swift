import Dispatch
import MemoModel
import MemoNet
import Synchronization

/// What every connection of a server shares.
final class ServerShared: Sendable {
    let store: any ServingStore
    let limits: ServerLimits
    let serverName: String
    let log: ServerLog
    let trust: TrustStore
    /// CLOCK_MONOTONIC nanoseconds when the server started (for uptime).
    let startedAt = monotonicNanos()
    /// Set when shutdown begins: the server is then not ready.
    let shuttingDown = Atomic<Bool>(false)
    /// Every loop's context, set once the loops are made: what `status` and `/metrics` read.
    let loopContexts = Mutex<[LoopBound<LoopContext>]>([])
    private let open = Mutex<(count: Int, drained: DispatchSemaphore?)>((0, nil))
    #if DEBUG
    /// Connection objects not yet freed (debug builds): a test checks that a closed connection goes away.
    let connectionObjects = Atomic<Int>(0)
    /// Connections whose TLS engine still holds its session's keys (debug builds): a test checks that a closed
    /// connection lets go of them when it closes, though a timer may hold the object longer.
    let sessionsHoldingKeys = Atomic<Int>(0)
    #endif

    init(store: any ServingStore, limits: ServerLimits, serverName: String, log: ServerLog, trust: TrustStore) {
        self.store = store
        self.limits = limits
        self.serverName = serverName
        self.log = log
        self.trust = trust
    }

    /// Counts a new connection. - Returns: how many are open, this one included.
    func connectionOpened() -> Int {
        open.withLock { state in
            state.count += 1
            return state.count
        }
    }

    func connectionClosed() {
        let drained = open.withLock { state -> DispatchSemaphore? in
            state.count -= 1
            return state.count == 0 ? state.drained : nil
        }
        drained?.signal()
    }

    var connectionCount: Int { open.withLock { $0.count } }

    /// Waits until no connection is open, or the timeout passes. - Returns: whether all closed.
    func waitForNoConnections(timeout: Double) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let already = open.withLock { state -> Bool in
            if state.count == 0 { return true }
            state.drained = semaphore
            return false
        }
        if already { return true }
        return semaphore.wait(timeout: .now() + timeout) == .success
    }
}
