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
    /// Connections accepted and not yet past `hello`, oldest first: what a full server closes to make room.
    private let unestablished = Mutex(Unestablished<LoopBound<ServerConnection>>())
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

    /// Counts `connection` (number `number`, started now) as before `hello` until `established(_:)`.
    func unestablished(_ number: UInt64, _ connection: LoopBound<ServerConnection>) {
        let now = monotonicNanos()
        unestablished.withLock { $0.add(number, connection, startedAt: now) }
    }

    /// Connection `number` said hello or closed. Call on its loop: the reference given back is dropped here,
    /// after the lock.
    func established(_ number: UInt64) {
        _ = unestablished.withLock { $0.remove(number) }
    }

    /// Takes the oldest connection still before `hello`, when it has waited at least `limits.evictableAfter`: the
    /// one a full server closes to make room for a new connection. Nil when there is none that old.
    func oldestUnestablished() -> LoopBound<ServerConnection>? {
        let cutoff = monotonicNanos() &- UInt64(max(0, limits.evictableAfter) * 1e9)
        return unestablished.withLock { $0.takeOldest(startedBy: cutoff) }
    }

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

/// Connections before `hello` by number (numbers are given in the order connections are accepted), each with the
/// time it started: the oldest is the one a full server closes to make room (`ServerShared.oldestUnestablished`).
struct Unestablished<Connection> {
    private var order = FIFO<UInt64>()
    private var waiting: [UInt64: (connection: Connection, startedAt: UInt64)] = [:]

    /// Numbers held in the queue: those waiting, and those behind the oldest that have left since.
    var queued: Int { order.count }
    var count: Int { waiting.count }

    mutating func add(_ number: UInt64, _ connection: Connection, startedAt: UInt64) {
        order.append(number)
        waiting[number] = (connection, startedAt)
    }

    /// Forgets `number` (it said hello or closed). - Returns: its connection, if it was waiting.
    mutating func remove(_ number: UInt64) -> Connection? {
        defer { dropLeft() }
        return waiting.removeValue(forKey: number)?.connection
    }

    /// Takes the oldest connection waiting, when it started at or before `cutoff`.
    mutating func takeOldest(startedBy cutoff: UInt64) -> Connection? {
        dropLeft()
        guard let number = order.first, let entry = waiting[number], entry.startedAt <= cutoff else { return nil }
        waiting[number] = nil
        dropLeft()
        return entry.connection
    }

    /// Numbers that left go from the front of the queue, so that it holds about as many as wait (and a stalled
    /// connection's followers until it goes), not every connection ever accepted.
    private mutating func dropLeft() {
        while let first = order.first, waiting[first] == nil { order.removeFirst() }
    }
}
