import Foundation
import MemoModel
/// A queued write the server refused when it was sent; the store has rolled it back and kept it in `notSaved`.
public struct RefusedWrite: Sendable, Hashable {
    /// The write as the user last made it (later queued writes of the same memo are folded in).
    public var write: QueuedWrite
    /// The server's reason, as one line.
    public var reason: String
    /// Someone else changed or deleted the memo first (an edit of a memo deleted elsewhere counts: `theirs` is nil
    /// and the front end offers `save as new`, as it does online).
    public var isConflict: Bool
    /// Their version after a conflict; nil when they deleted it (or it could not be read).
    public var theirs: Memo?
    /// The entry in `notSaved` that keeps it.
    public var notSavedID: UUID?
}

extension RemoteStore {
    // MARK: - Queueing (on the loop)

    /// Queues `write` when the connection is not live or older writes are still queued, so that the caller does not
    /// wait for the network: the write shows as pending at once and is sent when the connection is back. The queue
    /// is in memory at once; the writer puts it on disk (a failure shows on `queueProblem`, the write stays).
    /// - Parameter always: queue it even while live with nothing queued (a write whose outcome is unknown, to be
    ///   sent again).
    /// - Returns: the memo as shown, or nil when the write should go to the server now.
    func enqueueIfOffline(_ write: QueuedWrite, always: Bool = false) -> Memo? {
        guard queuePath != nil else { return nil }
        guard always || !state.queue.isEmpty || client.connectionState.value != .live else { return nil }
        let id = write.memo.id
        var write = write
        // An edit of a memo whose earlier write is still queued expects the revision that write will get.
        write.afterQueued = state.queue.contains { $0.write.memo.id == id }
        let token = changeShown(id) { $0.addPending(write.pendingForm) }
        state.queue.append((token, write))
        saveQueue()
        drainQueue()
        return write.memo
    }

    /// Lets a store made with `holdQueue` send its queue (once the connection is live).
    public func releaseQueue() {
        onLoop { store in
            store.state.released = true
            store.drainQueue()
        }
    }

    /// The number of writes waiting in the offline queue.
    public var queuedWrites: Int { onLoopAndWait { $0.state.queue.count } }

    /// The writes waiting in the offline queue, oldest first.
    public var queuedWriteList: [QueuedWrite] { onLoopAndWait { $0.state.queue.map(\.write) } }

    /// Waits until the queue and not-saved files are written as they stand now (for a clean exit); returns the
    /// problem that keeps them off disk, if any.
    public func flushQueueFiles() -> String? {
        writer.waitUntilWritten()
        // The outcome hops back to the loop: reading after it there sees it.
        return onLoopAndWait { $0.queueProblem.value ?? nil }
    }

    // MARK: - The not-saved list

    /// Sends a not-saved write again, as the last write of the queue: an edit or delete without an expected
    /// revision (it replaces what the server holds), a create with its id. Nothing happens for an unknown id.
    public func retryNotSaved(_ id: UUID) {
        takeNotSaved(id) { store, entry in
            var write = entry.write
            write.expectedRevision = nil
            write.afterQueued = false
            _ = store.enqueueIfOffline(write, always: true)
        }
    }

    /// Saves a not-saved write's text as a new memo (a new id, now as its date), through the queue.
    public func saveNotSavedAsNew(_ id: UUID) {
        takeNotSaved(id) { store, entry in
            let now = Date().unixMicros
            let memo = Memo(id: UUID(), content: entry.content, insertMicros: now, updateMicros: now, revision: 0)
            _ = store.enqueueIfOffline(
                QueuedWrite(kind: .create, memo: memo, expectedRevision: nil, afterQueued: false), always: true)
        }
    }

    /// Forgets a not-saved write for good.
    public func discardNotSaved(_ id: UUID) {
        takeNotSaved(id) { _, _ in }
    }

    /// Removes the entry `id` from the not-saved list and runs `then` with it, on the loop, in one event (so the
    /// write is never in neither list).
    private func takeNotSaved(_ id: UUID, then: @escaping @Sendable (RemoteStore, NotSavedWrite) -> Void) {
        onLoopAndWait { store in
            guard store.queuePath != nil, let index = store.state.notSaved.firstIndex(where: { $0.id == id }) else {
                return
            }
            let entry = store.state.notSaved.remove(at: index)
            then(store, entry)
            store.notSaved.send(store.state.notSaved)
            store.saveNotSaved()
        }
    }

    // MARK: - Sending the queue

    /// Sends the queued writes in order while the connection is live; a write that fails for want of a connection
    /// stays first in the queue for the next time. Runs at most once at a time. On the loop.
    func drainQueue() {
        guard state.released, !state.draining, !state.queue.isEmpty, client.connectionState.value == .live else {
            return
        }
        state.draining = true
        Task { await self.runDrain() }
    }

    /// The drain itself: each step's decision and outcome are events on the loop; only the requests wait here.
    private func runDrain() async {
        while let (token, write) = onLoopAndWait({ $0.nextToSend() }) {
            do {
                let memo = try await send(write)
                onLoopAndWait { $0.finishFirst(token, confirmedAt: memo.revision, for: write.memo.id) }
            } catch where Self.isConnectionFailure(error) {
                // Still ours to send: the next live connection starts again from here.
                onLoopAndWait { store in
                    store.state.draining = false
                    store.drainQueue()
                }
                return
            } catch MemoError.outcomeUnknown {
                // Sent, and maybe done: it stays first and is sent again, which is safe (a create by its id, an
                // update or delete with its expected revision; `send` reads what a retry meets). Not at once:
                // the server has just said its store is in trouble.
                await pause(Self.unknownOutcomePause)
            } catch {
                let refusal = await refusal(of: write, error)
                onLoopAndWait { $0.refuseFirst(token, write, refusal) }
            }
        }
    }

    private func pause(_ duration: Duration) async {
        do {
            try await Task.sleep(for: duration)
        } catch {
            // Only cancellation ends a sleep early, and nothing cancels the drain: the write is sent again sooner.
        }
    }

    /// The first queued write while live; else nil, ending the drain in the same event, so that a write queued
    /// after it starts a new one.
    private func nextToSend() -> (UInt64, QueuedWrite)? {
        guard let first = state.queue.first, client.connectionState.value == .live else {
            state.draining = false
            return nil
        }
        return first
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
                // Merged by the server when only other lines changed meanwhile (it keeps the version we started from).
                return try await client.update(
                    id: memo.id, content: memo.content, expectedRevision: write.expectedRevision, merge: true)
            } catch MemoError.conflict(let id, let expected, let actual) {
                // A run that ended before the answer came leaves the write done but queued: the memo holds it.
                if case .found(let now) = await read(memo.id), now.content.hasSameBytes(as: memo.content) {
                    return now
                }
                throw MemoError.conflict(id: id, expected: expected, actual: actual)
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

    /// What reading a memo found.
    enum Read: Sendable {
        case found(Memo)
        case deleted
        /// It could not be read (the connection, the server): nothing is known.
        case unknown
    }

    private func read(_ id: UUID) async -> Read {
        do {
            return .found(try await client.get(id: id))
        } catch MemoError.notFound {
            return .deleted
        } catch {
            return .unknown
        }
    }

    /// What the front end is told of a refused write: a conflict with their version; an edit of a memo deleted
    /// elsewhere (refused as not found, or a conflict with nothing to read) as a conflict with no version of
    /// theirs, so that `save as new` is offered.
    private func refusal(of write: QueuedWrite, _ error: any Error) async -> Refusal {
        var refusal = Refusal(reason: "\(error)", isConflict: false, deletedElsewhere: false, theirs: nil)
        switch error {
        case MemoError.conflict:
            refusal.isConflict = true
            switch await read(write.memo.id) {
            case .found(let theirs): refusal.theirs = theirs
            case .deleted: refusal.deletedElsewhere = true
            case .unknown: break
            }
        case MemoError.notFound where write.kind == .update:
            refusal.isConflict = true
            refusal.deletedElsewhere = true
        default:
            break
        }
        return refusal
    }

    struct Refusal: Sendable {
        var reason: String
        var isConflict: Bool
        var deletedElsewhere: Bool
        var theirs: Memo?
    }

    /// The first write is done: shown as pending until the mirror applies `revision`, then gone; later writes of
    /// the same memo now know which revision to expect.
    private func finishFirst(_ token: UInt64, confirmedAt revision: UInt64, for id: UUID) {
        guard state.queue.first?.token == token else { return }
        state.queue.removeFirst()
        for index in state.queue.indices where state.queue[index].write.memo.id == id {
            guard state.queue[index].write.afterQueued else { break }
            state.queue[index].write.afterQueued = false
            state.queue[index].write.expectedRevision = revision
            break
        }
        saveQueue()
        changeShown(id) { $0.confirm(token, revision: revision) }
    }

    /// The server refused the first write: it and the queued writes that built on it are rolled back from the list,
    /// the user's latest text moves to the not-saved list (never deleted), and the refusal is reported.
    private func refuseFirst(_ token: UInt64, _ write: QueuedWrite, _ refusal: Refusal) {
        guard state.queue.first?.token == token else { return }
        var dropped = [state.queue.removeFirst()]
        while let index = state.queue.firstIndex(where: { $0.write.memo.id == write.memo.id }),
              state.queue[index].write.afterQueued {
            dropped.append(state.queue.remove(at: index))
        }
        var latest = dropped.last!.write
        latest.expectedRevision = write.expectedRevision
        let entry = NotSavedWrite(
            write: latest, reason: refusal.reason, isConflict: refusal.isConflict,
            deletedElsewhere: refusal.deletedElsewhere)
        state.notSaved.append(entry)
        // Written before the queue loses it, in the writer's order: a crash between the two leaves the write in
        // both files (sent again, refused again), never in neither.
        saveNotSaved()
        saveQueue()
        changeShown(write.memo.id) { mirror in dropped.forEach { mirror.reject($0.token) } }
        refusals.send(RefusedWrite(
            write: latest, reason: refusal.reason, isConflict: refusal.isConflict, theirs: refusal.theirs,
            notSavedID: entry.id))
        notSaved.send(state.notSaved)
    }

    // MARK: - Files (handed to the writer)

    /// Hands the queue as it stands to the writer.
    func saveQueue() {
        guard let queuePath, let identity else { return }
        saveFile(WriteQueueFile.encode(state.queue.map(\.write), identity: identity), to: queuePath)
    }

    /// Hands the not-saved list as it stands to the writer.
    func saveNotSaved() {
        guard let notSavedPath, let identity else { return }
        saveFile(NotSavedFile.encode(state.notSaved, identity: identity), to: notSavedPath)
    }

    /// The writes stay in memory whatever happens to the file; a failure is shown until a later write of the same
    /// file succeeds (every change of the queue writes it whole again).
    private func saveFile(_ bytes: [UInt8]?, to path: String) {
        let client = self.client
        writer.write(bytes, to: path, onLoop: { client.execute($0) }) { [weak self] error in
            guard let self else { return }
            state.fileProblems[path] = error.map { "\($0)" }
            let problem = state.fileProblems.values.sorted().first.map { "writes kept in memory only: \($0)" }
            if queueProblem.value != problem { queueProblem.send(problem) }
        }
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
