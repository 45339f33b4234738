import MemoDiagnostics
import MemoNet
import MemoTLS
import MemoModel
import MemoWire
import Synchronization

/// What one loop's connections hold at one moment (summed across loops for `status` and `/metrics`).
struct LoopGauges {
    var readWrite = 0
    var readOnly = 0
    /// Connections still in the TLS handshake or before `hello`.
    var handshaking = 0
    var subscriptions = 0
    var queuedBytes = 0

    static func + (a: LoopGauges, b: LoopGauges) -> LoopGauges {
        LoopGauges(
            readWrite: a.readWrite + b.readWrite, readOnly: a.readOnly + b.readOnly,
            handshaking: a.handshaking + b.handshaking, subscriptions: a.subscriptions + b.subscriptions,
            queuedBytes: a.queuedBytes + b.queuedBytes)
    }
}

/// What one event loop's connections share: scratch buffers, the connections themselves and the subscribers to
/// fan changes out to. Confined to its loop's thread (held in a `LoopBound`).
final class LoopContext {
    /// Socket reads land here before they are fed to TLS; one per loop, not per connection.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Decrypted bytes on their way to a session.
    var plaintext: [UInt8] = []
    /// Frames on their way into TLS.
    var writer = WireWriter(capacity: 64 * 1024)
    /// TLS records on their way to a socket.
    var cipherBuffer = [UInt8](repeating: 0, count: 80 * 1024)
    /// Counts idle sweeps; a connection with no activity since the last one gives its buffers back.
    private(set) var tick: UInt64 = 1

    /// This loop's request, delivery, handshake and close counters (see `LoopCounters`).
    var counters = LoopCounters()
    /// Samples of `counters` once a second, for the rates over the last minute.
    var rates = RateWindow()

    /// Called about once a second: gives back the buffers of connections idle since the last sweep, and samples
    /// the counters for the rates.
    func sweep() {
        let current = tick
        for connection in connections.values { connection.releaseIfIdle(currentTick: current) }
        tick += 1
        rates.sample(counters, at: monotonicNanos())
    }

    /// What this loop's connections hold now: by role (nil: not past the handshake and hello), subscriptions,
    /// bytes queued.
    func gauges() -> LoopGauges {
        var gauges = LoopGauges()
        for connection in connections.values {
            switch connection.role {
            case .readWrite?: gauges.readWrite += 1
            case .readOnly?: gauges.readOnly += 1
            case nil: gauges.handshaking += 1
            }
            gauges.queuedBytes += connection.outboundBytes
        }
        for subscriber in subscribers.values { gauges.subscriptions += subscriber.subscriptions.count }
        return gauges
    }
    /// Every open connection of this loop.
    var connections: [ObjectIdentifier: ServerConnection] = [:]
    /// Subscriptions by connection: the connection itself (so that a delivery needs no second lookup) and, per
    /// request id, the revision after which changes are due. Most connections hold one subscription.
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]

    struct Subscriber {
        let connection: ServerConnection
        var subscriptions: [(requestID: UInt32, after: UInt64)]
    }

    private let counter: SubscriberCount

    /// Whether a change's records for this loop's subscribers go to the kernel in one submission (`--sends`).
    private var batchesSends: Bool
    /// The batch, opened at the first change that has enough subscribers to share it; nil before, or when the
    /// kernel refused io_uring (then every record is written by its connection, as with `--sends each`).
    private var sendBatch: SendBatch?
    /// The connection of each record in `sendBatch`, by its index there.
    private var staged: [ServerConnection] = []
    /// Fewer subscribers than this are written one by one: a batch saves little for them.
    static let batchThreshold = 4

    init(counter: SubscriberCount, batchesSends: Bool) {
        self.counter = counter
        self.batchesSends = batchesSends
        plaintext.reserveCapacity(64 * 1024)
    }

    /// Registers a subscription that is due every change after `revision`; call with `UInt64.max` before reading
    /// the snapshot (so that the broadcaster counts it), then again with the snapshot's revision.
    func subscribe(_ connection: ServerConnection, requestID: UInt32, after revision: UInt64) {
        let key = ObjectIdentifier(connection)
        if let slot = subscribers[key]?.subscriptions.firstIndex(where: { $0.requestID == requestID }) {
            subscribers[key]?.subscriptions[slot].after = revision
            return
        }
        subscribers[key, default: Subscriber(connection: connection, subscriptions: [])]
            .subscriptions.append((requestID, revision))
        counter.value.add(1, ordering: .sequentiallyConsistent)
    }

    func unsubscribe(_ connection: ServerConnection, requestID: UInt32) {
        let key = ObjectIdentifier(connection)
        guard let slot = subscribers[key]?.subscriptions.firstIndex(where: { $0.requestID == requestID }) else {
            return
        }
        subscribers[key]?.subscriptions.remove(at: slot)
        counter.value.subtract(1, ordering: .sequentiallyConsistent)
        if subscribers[key]?.subscriptions.isEmpty == true { subscribers[key] = nil }
    }

    func removeSubscriptions(of connection: ServerConnection) {
        if let removed = subscribers.removeValue(forKey: ObjectIdentifier(connection)) {
            counter.value.subtract(removed.subscriptions.count, ordering: .sequentiallyConsistent)
        }
    }

    /// Keeps a connection that started on this loop, active as of this tick, until `removeAll(of:closedWith:)`.
    func add(_ connection: ServerConnection) {
        connections[ObjectIdentifier(connection)] = connection
        connection.lastActiveTick = tick
    }

    /// Forgets a connection that closed, counting its close by `reason` (see `CloseReason`).
    func removeAll(of connection: ServerConnection, closedWith reason: String) {
        removeSubscriptions(of: connection)
        connections[ObjectIdentifier(connection)] = nil
        counters.closes[CloseReason(reason: reason).rawValue] &+= 1
    }

    /// Starts `connection`'s subscription `requestID`: registered before the snapshot or history is read (so that
    /// the broadcaster counts it; see `Broadcaster`), then due every change after the start's head, or removed
    /// when the start has none (it was refused).
    func start(_ start: WatchStart, requestID: UInt32, of connection: ServerConnection) -> SubscriptionStart {
        subscribe(connection, requestID: requestID, after: UInt64.max)
        let server = connection.server
        let first = SubscriptionStart(
            start, requestID: requestID, store: server.store, maxFrameSize: server.limits.maxFrameSize,
            version: connection.outbound.version)
        if let head = first.head {
            subscribe(connection, requestID: requestID, after: head)
        } else {
            unsubscribe(connection, requestID: requestID)
        }
        return first
    }

    /// The store let go (it cannot follow its shared database): every connection gets going-away 504 and closes;
    /// the clients reconnect, to this server or another, and resume.
    func letGo(_ reason: String) {
        for connection in connections.values {
            connection.goAway(
                "this server fell behind its database (\(reason)) and is reloading; reconnect, to it or another "
                    + "server, and resume", code: .lagging, reason: "lagging: \(reason)")
        }
    }

    /// Hands changes (in revision order) to every subscriber on this loop that is due them, each subscriber's
    /// socket written once for all of them.
    func deliver(_ frames: [SharedFrame]) {
        guard let last = frames.last else { return }
        for frame in frames { StageTrace.record(.fanout, frame.revision) }
        defer { for frame in frames { StageTrace.record(.written, frame.revision) } }
        guard !subscribers.isEmpty else { return }
        var delivered: UInt64 = 0
        let batch = frames.count == 1 ? openBatch() : nil
        for subscriber in subscribers.values {
            var queued = false
            if frames.count == 1, subscriber.subscriptions.count == 1 {
                // The usual delivery, one change to one subscription, written at once when nothing waits: sealed
                // into the batch, sent with the other subscribers' records.
                let (requestID, after) = subscriber.subscriptions[0]
                guard last.revision > after else { continue }
                delivered &+= 1
                if let batch, stage(last, requestID: requestID, of: subscriber.connection, into: batch) { continue }
                if subscriber.connection.deliver(last, requestID: requestID) { subscriber.connection.flush() }
                continue
            }
            for (requestID, after) in subscriber.subscriptions where last.revision > after {
                for frame in frames where frame.revision > after {
                    subscriber.connection.enqueue(.change(frame, requestID: requestID))
                    queued = true
                    delivered &+= 1
                }
            }
            if queued { subscriber.connection.flush() }
        }
        if let batch { submit(batch) }
        // Once per change and loop, not per subscriber: one clock read for the whole batch.
        counters.deliveries &+= delivered
        let now = monotonicNanos()
        for frame in frames { counters.deliveryDelay.observe(nanoseconds: now &- min(now, frame.madeAt)) }
    }

    /// The loop's send batch, when this change has enough subscribers here to share one (opened the first time).
    private func openBatch() -> SendBatch? {
        guard batchesSends, subscribers.count >= Self.batchThreshold else { return nil }
        if let sendBatch, sendBatch.isWorking { return sendBatch }
        guard sendBatch == nil, let opened = try? SendBatch() else {
            // Refused (or failed since): each connection writes its own records from now on.
            batchesSends = false
            sendBatch = nil
            return nil
        }
        sendBatch = opened
        staged.reserveCapacity(1024)
        return opened
    }

    /// Seals `frame` for `connection` into `batch`, submitting what `batch` holds first when it is full.
    /// - Returns: false when the connection delivers it itself instead (see `ServerConnection.stage`).
    private func stage(_ frame: SharedFrame, requestID: UInt32, of connection: ServerConnection, into batch: SendBatch)
        -> Bool
    {
        let needed = TLSEngine.maxRecordLength
        if batch.room(atLeast: needed) == nil { submit(batch) }
        guard let room = batch.room(atLeast: needed),
              let index = connection.stage(frame, requestID: requestID, into: batch, room: room, tick: tick)
        else { return false }
        assert(index == staged.count)
        staged.append(connection)
        return true
    }

    /// Sends what `batch` holds and hands each record's outcome to its connection.
    private func submit(_ batch: SendBatch) {
        guard batch.count > 0 else { return }
        counters.sendBatches &+= 1
        counters.batchedSends &+= UInt64(batch.count)
        do {
            // Read from a local array: it keeps every connection alive through the submission, so none is retained
            // again for its call (through the property, the compiler must assume a call could change it).
            let connections = staged
            batch.submit { index, outcome, record in connections[index].sent(record, outcome) }
        }
        staged.removeAll(keepingCapacity: true)
    }
}
