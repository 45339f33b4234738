import MemoCore
import MemoNet
import MemoWire
import Synchronization

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

    /// Called about once a second: gives back the buffers of connections idle since the last sweep.
    func sweep() {
        let current = tick
        for connection in connections.values { connection.releaseIfIdle(currentTick: current) }
        tick += 1
    }
    /// Every open connection of this loop.
    var connections: [ObjectIdentifier: ServerConnection] = [:]
    /// Subscriptions by connection: request id -> the revision after which changes are due.
    private var subscribers: [ObjectIdentifier: [UInt32: UInt64]] = [:]

    private let counter: SubscriberCount

    init(counter: SubscriberCount) {
        self.counter = counter
        plaintext.reserveCapacity(64 * 1024)
    }

    /// Registers a subscription that is due every change after `revision`; call with `UInt64.max` before reading
    /// the snapshot (so that the broadcaster counts it), then again with the snapshot's revision.
    func subscribe(_ connection: ServerConnection, requestID: UInt32, after revision: UInt64) {
        let previous = subscribers[ObjectIdentifier(connection), default: [:]].updateValue(revision, forKey: requestID)
        if previous == nil { counter.value.add(1, ordering: .sequentiallyConsistent) }
    }

    func unsubscribe(_ connection: ServerConnection, requestID: UInt32) {
        let key = ObjectIdentifier(connection)
        if subscribers[key]?.removeValue(forKey: requestID) != nil {
            counter.value.subtract(1, ordering: .sequentiallyConsistent)
        }
        if subscribers[key]?.isEmpty == true { subscribers[key] = nil }
    }

    func removeSubscriptions(of connection: ServerConnection) {
        if let removed = subscribers.removeValue(forKey: ObjectIdentifier(connection)) {
            counter.value.subtract(removed.count, ordering: .sequentiallyConsistent)
        }
    }

    func removeAll(of connection: ServerConnection) {
        removeSubscriptions(of: connection)
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Hands changes (in revision order) to every subscriber on this loop that is due them, each subscriber's
    /// socket written once for all of them.
    func deliver(_ frames: [SharedFrame]) {
        guard let last = frames.last else { return }
        for frame in frames { StageTrace.record(.fanout, frame.revision) }
        defer { for frame in frames { StageTrace.record(.written, frame.revision) } }
        for (key, subscriptions) in subscribers {
            guard let connection = connections[key] else { continue }
            var queued = false
            for (requestID, after) in subscriptions where last.revision > after {
                for frame in frames where frame.revision > after {
                    connection.enqueue(.change(frame, requestID: requestID))
                    queued = true
                }
            }
            if queued { connection.flush() }
        }
    }
}
