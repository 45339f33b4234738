import Foundation
import MemoCore
import Synchronization

/// The offline writes of a `RemoteStore`, oldest first, and whether they are being sent now.
struct OfflineQueue {
    var entries: [(token: UInt64, write: QueuedWrite)] = []
    var draining = false
}

/// A queued write the server refused when it was sent; the store has rolled it back.
public struct RefusedWrite: Sendable, Hashable {
    /// The write as the user last made it (later queued writes of the same memo are folded in).
    public var write: QueuedWrite
    /// The server's reason, as one line.
    public var reason: String
    /// Someone else changed or deleted the memo first.
    public var isConflict: Bool
    /// Their version after a conflict; nil when they deleted it (or it could not be read).
    public var theirs: Memo?
}

extension RemoteStore {
    /// Queues `write` when the connection is not live or older writes are still queued, so that the caller does not
    /// wait for the network: the write shows as pending at once and is sent when the connection is back.
    /// - Parameter always: queue it even while live with nothing queued (a write whose outcome is unknown, to be
    ///   sent again).
    /// - Returns: the memo as shown, or nil when the write should go to the server now.
    /// - Throws: when the queue file cannot be written (the write is then not shown either).
    func enqueueIfOffline(_ write: QueuedWrite, always: Bool = false) throws -> Memo? {
        guard let queuePath else { return nil }
        let id = write.memo.id
        let outcome: (deliveries: [ShownDeliveries], error: (any Error)?)? = offline.withLock { queue in
            guard always || !queue.entries.isEmpty || client.connectionState.value != .live else { return nil }
            var write = write
            // An edit of a memo whose earlier write is still queued expects the revision that write will get.
            write.afterQueued = queue.entries.contains { $0.write.memo.id == id }
            let (token, added) = changeShown(id) { $0.addPending(write.pendingForm) }
            queue.entries.append((token, write))
            do {
                try WriteQueueFile.save(queue.entries.map(\.write), to: queuePath)
            } catch {
                queue.entries.removeLast()
                // Queued after the addition's, so that a watcher that saw it shown sees it go.
                return ([added, changeShown(id) { $0.reject(token) }.deliveries], error)
            }
            return ([added], nil)
        }
        guard let outcome else { return nil }
        // Everything queued is delivered, outside the queue's lock, even when the write failed.
        outcome.deliveries.forEach(deliver)
        if let error = outcome.error { throw error }
        drainQueue()
        return write.memo
    }

    /// Lets a store made with `holdQueue` send its queue (once the connection is live).
    public func releaseQueue() {
        queueReleased.store(true, ordering: .relaxed)
        drainQueue()
    }

    /// The number of writes waiting in the offline queue.
    public var queuedWrites: Int { offline.withLock { $0.entries.count } }

    /// Sends the queued writes in order while the connection is live; a write that fails for want of a connection
    /// stays first in the queue for the next time. Runs at most once at a time.
    func drainQueue() {
        guard queueReleased.load(ordering: .relaxed) else { return }
        let start = offline.withLock { queue -> Bool in
            guard !queue.draining, !queue.entries.isEmpty, client.connectionState.value == .live else { return false }
            queue.draining = true
            return true
        }
        guard start else { return }
        Task { [self] in
            while let (token, write) = nextToSend() {
                do {
                    let memo = try await send(write)
                    finishFirst(token, confirmedAt: memo.revision, for: write.memo.id)
                } catch where Self.isConnectionFailure(error) {
                    // Still ours to send: the next live connection starts again from here.
                    offline.withLock { $0.draining = false }
                    drainQueue()
                    return
                } catch MemoError.outcomeUnknown {
                    // Sent, and maybe done: it stays first and is sent again, which is safe (a create by its id, an
                    // update or delete with its expected revision; `send` reads what a retry meets). Not at once:
                    // the server has just said its store is in trouble.
                    try? await Task.sleep(for: Self.unknownOutcomePause)
                } catch {
                    await refuseFirst(token, write, error)
                }
            }
        }
    }

    /// The first queued write while live; else nil, ending the drain under the same lock as `enqueueIfOffline`
    /// checks it, so that a write queued meanwhile is never left behind.
    private func nextToSend() -> (UInt64, QueuedWrite)? {
        offline.withLock { queue in
            guard let first = queue.entries.first, client.connectionState.value == .live else {
                queue.draining = false
                return nil
            }
            return first
        }
    }

    /// Sends one write. A create carries its id (a resend finds the memo the first try made); an update or delete
    /// carries the revision it started from.
    private func send(_ write: QueuedWrite) async throws -> Memo {
        let memo = write.memo
        switch write.kind {
        case .create:
            return try await client.create(content: memo.content, id: memo.id, insertMicros: memo.insertMicros)
        case .update:
            do {
                return try await client.update(
                    id: memo.id, content: memo.content, expectedRevision: write.expectedRevision)
            } catch MemoError.conflict {
                // A run that ended before the answer came leaves the write done but queued: the memo holds it.
                if let now = try? await client.get(id: memo.id), now.content.hasSameBytes(as: memo.content) {
                    return now
                }
                throw MemoError.conflict(id: memo.id, expected: write.expectedRevision, actual: 0)
            }
        case .delete:
            do {
                return try await client.delete(id: memo.id, expectedRevision: write.expectedRevision, known: memo)
            } catch MemoError.notFound {
                // Gone already (by us in a run that ended before the answer, or by someone else): nothing to undo.
                return memo
            }
        }
    }

    /// The first write is done: shown as pending until the mirror applies `revision`, then gone; later writes of
    /// the same memo now know which revision to expect.
    private func finishFirst(_ token: UInt64, confirmedAt revision: UInt64, for id: UUID) {
        let deliveries: ShownDeliveries? = offline.withLock { queue in
            guard queue.entries.first?.token == token else { return nil }
            queue.entries.removeFirst()
            for index in queue.entries.indices where queue.entries[index].write.memo.id == id {
                guard queue.entries[index].write.afterQueued else { break }
                queue.entries[index].write.afterQueued = false
                queue.entries[index].write.expectedRevision = revision
                break
            }
            saveQueue(queue.entries)
            return changeShown(id) { $0.confirm(token, revision: revision) }.deliveries
        }
        if let deliveries { deliver(deliveries) }
    }

    /// The server refused the first write: it and the queued writes that built on it are rolled back, and the
    /// refusal is reported with the user's latest text.
    private func refuseFirst(_ token: UInt64, _ write: QueuedWrite, _ error: any Error) async {
        var isConflict = false
        if case MemoError.conflict = error { isConflict = true }
        let theirs = isConflict ? try? await client.get(id: write.memo.id) : nil
        let (latest, deliveries): (QueuedWrite, ShownDeliveries?) = offline.withLock { queue in
            guard queue.entries.first?.token == token else { return (write, nil) }
            var dropped = [queue.entries.removeFirst()]
            while let index = queue.entries.firstIndex(where: { $0.write.memo.id == write.memo.id }),
                  queue.entries[index].write.afterQueued {
                dropped.append(queue.entries.remove(at: index))
            }
            saveQueue(queue.entries)
            let deliveries = changeShown(write.memo.id) { mirror in dropped.forEach { mirror.reject($0.token) } }
            var latest = dropped.last!.write
            latest.expectedRevision = write.expectedRevision
            return (latest, deliveries.deliveries)
        }
        if let deliveries { deliver(deliveries) }
        refusals.send(RefusedWrite(write: latest, reason: "\(error)", isConflict: isConflict, theirs: theirs))
    }

    private func saveQueue(_ entries: [(token: UInt64, write: QueuedWrite)]) {
        guard let queuePath else { return }
        // The writes are still in memory and on screen; the next change of the queue tries the file again.
        try? WriteQueueFile.save(entries.map(\.write), to: queuePath)
    }

    /// How long a queued write whose outcome is unknown waits before it is sent again.
    static let unknownOutcomePause: Duration = .milliseconds(500)

    /// Errors that say nothing about the write itself, only that the server could not be asked.
    static func isConnectionFailure(_ error: any Error) -> Bool {
        guard let error = error as? ClientError else { return false }
        switch error {
        case .unreachable, .timedOut, .closed, .tlsRefused: return true
        case .protocolError, .server: return false
        }
    }
}
