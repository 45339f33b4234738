import Foundation
import MemoCore
import MemoWire
import Synchronization

/// The storage protocol over the wire: a view model cannot tell it from `MemoryStore`.
///
/// Its list is the mirror of the server's: a snapshot, then every change in revision order, given to `watchList`
/// watchers as position edits (O(log N) per change) and, to holders of `memoList()`, as the whole list re-sent
/// newest first after each applied batch. Local writes show at once (their ids are in
/// `pendingWrites` until the server confirms them and the mirror has applied them); a refused write disappears
/// again and its error is thrown. The mirror can be saved to a cache file and loaded before the connection is
/// up, in which case it is `stale` until the server has answered.
///
/// With a `queuePath`, a write made while the connection is not live does not wait for it: it is shown at once,
/// kept in a durable queue (`WriteQueueFile`) and sent in order once the connection is back (RemoteStore+Offline).
public final class RemoteStore: MemoStorage {
    public let client: MemoConnection
    public let cachePath: String?
    /// Where writes made offline are kept until the server has them; nil: writes wait for the server.
    public let queuePath: String?
    let mirror: Mutex<Mirror>
    /// The offline queue, oldest first, each with its token in the mirror's pending writes.
    let offline: Mutex<OfflineQueue>
    /// Writes from the queue the server refused (they are rolled back); no replay.
    public let refusals = Subject<RefusedWrite>()
    private let stateWatch = Mutex<Subscription?>(nil)
    /// False until `releaseQueue()` when the store was made with `holdQueue`: nothing is sent from the queue before
    /// its owner listens to `refusals` (a refusal sent to no one would be lost).
    let queueReleased: Atomic<Bool>
    private let subscription = Mutex<MemoConnection.SubscriptionHandle?>(nil)
    // Ordering: every change of the mirror (a read's events on the loop, a local write on a writer's task) queues
    // what it did to `list`, `deltas` and `pendingWrites` under the mirror's lock, and delivers after releasing it
    // (`ShownDeliveries`). Queued under one lock, delivered by whichever thread comes first, each subscriber gets
    // the lists and edits in the order the mirror went through them, each once: no versions, no counters.
    private let list: Subject<[Memo]>
    /// The list as position edits (no replay: `watchList` starts each watcher with a reset read under the lock).
    private let deltas = Subject<ListDelta>()
    /// Set for good by the first `memoList()`: from then on the whole list is built after every change (O(N)),
    /// for whoever holds the subject, subscribed or not yet. Set before the mirror's lock is taken to send the
    /// first list, so that every change the lock orders after it sees it.
    private let listHeld = Atomic<Bool>(false)
    /// Changes the mirror applied, in revision order. A resync (a snapshot after a lost history) sends none:
    /// `events` carries it as a `reset` with `resync` set, and the list's subjects get the whole new list.
    public let changes = Subject<Change>()
    /// Everything the mirror did, in order: resets, change batches, becoming fresh, resubscribing.
    public let events = Subject<MirrorEvent>()
    /// The ids of local writes the server has not yet confirmed (for a status bar); replays.
    public let pendingWrites: Subject<Set<UUID>>
    /// True while the list is from the cache or not caught up with the server; replays.
    public let stale: Subject<Bool>
    /// The client's connection state; replays.
    public var connectionState: Subject<ConnectionState> { client.connectionState }

    /// - Parameters:
    ///   - cachePath: a mirror cache to load now (if it exists) and to write with `saveCache()`.
    ///   - queuePath: the offline write queue to load now (its writes show as pending) and to keep.
    ///   - holdQueue: send nothing from the queue until `releaseQueue()`.
    /// - Throws: `MemoError.storage` for a damaged cache or queue file.
    public init(client: MemoConnection, cachePath: String? = nil, queuePath: String? = nil, holdQueue: Bool = false)
        throws
    {
        queueReleased = Atomic(!holdQueue)
        self.client = client
        self.cachePath = cachePath
        self.queuePath = queuePath
        var initial = Mirror()
        if let cachePath, let cached = try MirrorCache.load(from: cachePath) {
            initial = Mirror(cachedRevision: cached.revision, memos: cached.memos)
        }
        var queue = OfflineQueue()
        if let queuePath {
            for write in try WriteQueueFile.load(from: queuePath) {
                queue.entries.append((initial.addPending(write.pendingForm), write))
            }
        }
        mirror = Mutex(initial)
        offline = Mutex(queue)
        list = Subject(initial.list)
        pendingWrites = Subject(initial.pendingIDs)
        stale = Subject(true)
        guard queuePath != nil else { return }
        let watch = client.connectionState.subscribe { [weak self] state in
            if state == .live { self?.drainQueue() }
        }
        stateWatch.withLock { $0 = watch }
    }

    deinit {
        subscription.withLock { $0 }?.cancel()
        stateWatch.withLock { $0 }?.cancel()
    }

    /// Whether there is a list to show: a cache was loaded or the server sent a snapshot.
    public var hasList: Bool { mirror.withLock { $0.hasBase } }

    /// The last revision the mirror applied.
    public var revision: UInt64 { mirror.withLock { $0.revision } }

    /// The mirror's state, copied.
    public var snapshot: Mirror { mirror.withLock { $0 } }

    /// Starts mirroring (subscribing on this and every later connection). `memoList()` calls it.
    public func startMirror() {
        let started: Bool = subscription.withLock { $0 != nil }
        guard !started else { return }
        let handle = client.subscribe(
            start: { [weak self] in self?.mirror.withLock { $0.resumeRevision } },
            handler: { [weak self] events in self?.received(events) })
        let extra: MemoConnection.SubscriptionHandle? = subscription.withLock { current in
            if current != nil { return handle }
            current = handle
            return nil
        }
        extra?.cancel()
    }

    /// Waits until the mirror is fresh (caught up with the server).
    /// - Throws: `ClientError.timedOut` after `timeout`.
    public func waitUntilFresh(timeout: Duration? = nil) async throws {
        startMirror()
        let limit = timeout ?? client.configuration.requestTimeout
        let stream = stale.values
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await isStale in stream where !isStale { return }
            }
            group.addTask {
                try await Task.sleep(for: limit)
                throw ClientError.timedOut(server: self.client.configuration.server, seconds: limit.seconds)
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Writes the mirror (as the server last confirmed it) to `cachePath`.
    public func saveCache() throws {
        guard let cachePath else { return }
        let (revision, memos, hasBase) = mirror.withLock { ($0.revision, $0.table.list, $0.hasBase) }
        guard hasBase else { return }
        try MirrorCache.save(revision: revision, memos: memos, to: cachePath)
    }

    // MARK: - Subscription

    /// What one change of the mirror has to tell the list's subjects, queued under the mirror's lock.
    struct ShownDeliveries {
        fileprivate var delta: Subject<ListDelta>.PendingDelivery?
        fileprivate var list: Subject<[Memo]>.PendingDelivery?
        fileprivate var pendingIDs: Subject<Set<UUID>>.PendingDelivery?
    }

    /// Queues, under the mirror's lock, what a change of the mirror did: the edits for list watchers, the whole
    /// list once `memoList()` was asked for (building it is O(N)), the pending ids.
    private func enqueueShown(_ delta: ListDelta?, of mirror: borrowing Mirror) -> ShownDeliveries {
        var deliveries = ShownDeliveries()
        // A write can leave the pending set without changing the list (a create and its delete, both applied).
        let pendingIDs = mirror.pendingIDs
        if pendingWrites.value != pendingIDs { deliveries.pendingIDs = pendingWrites.enqueue(pendingIDs) }
        guard let delta else { return deliveries }
        deliveries.delta = deltas.enqueue(delta)
        if listHeld.load(ordering: .relaxed) { deliveries.list = list.enqueue(mirror.list) }
        return deliveries
    }

    /// Delivers what `enqueueShown` queued; call it holding no lock.
    func deliver(_ deliveries: ShownDeliveries) {
        if let delta = deliveries.delta { deltas.deliver(delta) }
        if let list = deliveries.list { self.list.deliver(list) }
        if let pendingIDs = deliveries.pendingIDs { pendingWrites.deliver(pendingIDs) }
    }

    /// Changes the pending writes about `id` under the mirror's lock and queues what that did to the list; the
    /// caller delivers the result (after releasing any lock of its own).
    func changeShown<Result: Sendable>(
        _ id: UUID?, _ body: (inout Mirror) throws -> Result
    ) rethrows -> (result: Result, deliveries: ShownDeliveries) {
        try mirror.withLock { mirror in
            let (result, delta) = try mirror.changeShowing(id, body)
            return (result, enqueueShown(delta, of: mirror))
        }
    }

    /// `changeShown`, delivered at once.
    @discardableResult
    func changeShownNow<Result: Sendable>(_ id: UUID?, _ body: (inout Mirror) -> Result) -> Result {
        let (result, deliveries) = changeShown(id, body)
        deliver(deliveries)
        return result
    }

    /// Runs on the client's loop thread, one read's events at a time, so sends to `changes` and `events` stay in
    /// order; the list's subjects are ordered by the mirror's lock.
    private func received(_ batch: [SubscriptionEvent]) {
        let (events, deliveries, isStale) = mirror.withLock { mirror in
            let (events, delta) = mirror.applyShowing(batch)
            return (events, enqueueShown(delta, of: mirror), mirror.isStale)
        }
        deliver(deliveries)
        for event in events {
            switch event {
            case .changes(let applied):
                for change in applied { changes.send(change) }
            case .resubscribe:
                subscription.withLock { $0 }?.restart()
            case .reset, .fresh, .failed:
                break
            }
            self.events.send(event)
        }
        if stale.value != isStale { stale.send(isStale) }
    }

    // MARK: - MemoStorage

    /// The whole list, re-sent after every change once someone asked for it (until then it is not built: the
    /// front end watches position edits).
    public func memoList() -> Subject<[Memo]> {
        startMirror()
        listHeld.store(true, ordering: .relaxed)
        let pending = mirror.withLock { list.enqueue($0.list) }
        list.deliver(pending)
        return list
    }

    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        startMirror()
        let (subscription, pending) = mirror.withLock { mirror in
            deltas.subscribeDeferred(prefix: [.reset(mirror.list)], handler)
        }
        deltas.deliver(pending)
        return subscription
    }

    /// Runs a write with its pending form shown until the server answers; with an offline queue, a write made while
    /// not live (or behind queued ones) is queued instead and returns at once, and so is one whose outcome turned out
    /// unknown (it is sent again from the queue).
    private func write(
        _ pendingForm: PendingWrite?, queued: QueuedWrite?, _ body: () async throws -> Memo
    ) async throws -> Memo {
        let mirroring = subscription.withLock { $0 != nil }
        guard mirroring, let pendingForm else { return try await body() }
        if let queued, let shown = try enqueueIfOffline(queued) { return shown }
        let id = pendingForm.id
        let token = changeShownNow(id) { $0.addPending(pendingForm) }
        do {
            let memo = try await body()
            changeShownNow(id) { $0.confirm(token, revision: memo.revision) }
            return memo
        } catch {
            // Sent, and maybe done: not rolled back as failed, but queued to be sent again (safe: a create by its id,
            // an update or delete with its expected revision), shown as pending meanwhile.
            var requeued: Memo?
            if case MemoError.outcomeUnknown = error, let queued {
                requeued = try? enqueueIfOffline(queued, always: true)
            }
            changeShownNow(id) { $0.reject(token) }
            if let requeued { return requeued }
            throw error
        }
    }

    @discardableResult
    public func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        let id = id ?? UUID()
        let now = Date().unixMicros
        let insert = insertDate?.unixMicros
        let shown = Memo(id: id, content: content, insertMicros: insert ?? now, updateMicros: now, revision: 0)
        let queued = QueuedWrite(kind: .create, memo: shown, expectedRevision: nil, afterQueued: false)
        return try await write(.create(shown), queued: queued) {
            try await client.create(content: content, id: id, insertMicros: insert)
        }
    }

    public func get(id: UUID) async throws -> Memo {
        try await client.get(id: id)
    }

    @discardableResult
    public func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        // The memo as on screen: a memo made offline is in the pending writes, not yet in the table.
        var shown = mirror.withLock { $0.shown(id) }
        shown?.content = content
        shown?.updateMicros = Date().unixMicros
        let queued = shown.map {
            QueuedWrite(kind: .update, memo: $0, expectedRevision: expectedRevision, afterQueued: false)
        }
        return try await write(shown.map { .update($0) }, queued: queued) {
            try await client.update(id: id, content: content, expectedRevision: expectedRevision)
        }
    }

    @discardableResult
    public func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        let known = mirror.withLock { $0.shown(id) }
        let queued = known.map {
            QueuedWrite(kind: .delete, memo: $0, expectedRevision: expectedRevision, afterQueued: false)
        }
        return try await write(known.map { .delete($0) }, queued: queued) {
            try await client.delete(id: id, expectedRevision: expectedRevision, known: known)
        }
    }
}
