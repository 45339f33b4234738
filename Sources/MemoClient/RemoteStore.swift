import Foundation
import MemoModel
import MemoWire

/// The storage protocol over the wire: a view model cannot tell it from `MemoryStore`.
///
/// Its list is the mirror of the server's: a snapshot, then every change in revision order, given to `watchList`
/// watchers as position edits (O(log N) per change) and, while someone holds a subscription to `memoList()`, as
/// the whole list re-sent newest first after each applied batch. Local writes show at once (their ids are in
/// `pendingWrites` until the server confirms them and the mirror has applied them); a refused write disappears
/// again and its error is thrown. The mirror can be saved to a cache file and loaded before the connection is
/// up, in which case it is `stale` until the server has answered.
///
/// One owner: the mirror, the offline queue and the not-saved list belong to the client's loop (the thread that
/// runs `ConnectionOwner`), and every change of them, a subscription's events or a local write, is an event run there
/// one at a time. So there is no lock, and every subject below is sent to from that one thread, in the order the
/// mirror went through its states: observers get one ordered stream. Queue files are written off the loop by a
/// `QueueFileWriter`; the outcome comes back to the loop.
///
/// With a `queuePath`, a write made while the connection is not live does not wait for it: it is shown at once,
/// kept in a queue (in memory at once, on disk as soon as the writer has written it) and sent in order once the
/// connection is back (RemoteStore+Offline). The queue is bound to `identity`: it replays only under the server
/// and certificate that wrote it.
public final class RemoteStore: MemoStorage {
    public let client: MemoConnection
    public let cachePath: String?
    /// Where writes made offline are kept until the server has them; nil: writes wait for the server.
    public let queuePath: String?
    /// Where queued writes the server refused are kept (beside the queue); nil without a queue.
    public let notSavedPath: String?
    /// The server and certificate this store's queue belongs to; nil without a queue.
    public let identity: ClientIdentity?
    /// Everything below that changes, confined to the client's loop.
    let state: LoopState
    let writer = QueueFileWriter()
    /// Writes from the queue the server refused (they are rolled back and moved to `notSaved`); no replay.
    public let refusals = Subject<RefusedWrite>()
    /// Queued writes the server refused, oldest first, each with the reason; kept on disk. Replays.
    public let notSaved: Subject<[NotSavedWrite]>
    /// Why the offline queue (or the not-saved list) is not on disk: the writes are kept in memory, shown as
    /// pending, and the file is tried again at the next change; nil while the files are written. Replays.
    public let queueProblem: Subject<String?>
    /// The role of our certificate: the server's last welcome's, else the one remembered with the mirror cache for
    /// this certificate; nil when neither is known. Replays.
    public let role: Subject<Role?>
    let list: Subject<[Memo]>
    /// The list as position edits (no replay: `watchList` starts each watcher with a reset read on the loop).
    let deltas = Subject<ListDelta>()
    /// Changes the mirror applied, in revision order. A resync (a snapshot after a lost history) sends none:
    /// `events` carries it as a `reset` with `resync` set, and the list's subjects get the whole new list.
    public let changes = Subject<Change>()
    /// Everything the mirror did, in order: resets, change batches, becoming fresh, resubscribing.
    public let events = Subject<MirrorEvent>()
    /// The ids of local writes the server has not yet confirmed (for a status bar); replays.
    public let pendingWrites: Subject<Set<UUID>>
    /// True while the list is from the cache or not caught up with the server; replays.
    public let stale: Subject<Bool>
    /// Whether the mirror has a base (a cache or a snapshot): `hasList`, readable without waiting for the loop.
    private let hasBase: Subject<Bool>
    /// The client's connection state; replays.
    public var connectionState: Subject<ConnectionState> { client.connectionState }
    private let watches: [Subscription]

    /// The state the client's loop owns. `@unchecked Sendable`: it is read and changed only on the client's loop
    /// thread (every access is inside `onLoop`, `onLoopAndWait` or a handler the loop runs), never elsewhere.
    final class LoopState: @unchecked Sendable {
        var mirror: Mirror
        /// The offline queue, oldest first, each with its token in the mirror's pending writes.
        var queue: [(token: UInt64, write: QueuedWrite)] = []
        var notSaved: [NotSavedWrite] = []
        var draining = false
        /// False until `releaseQueue()` when the store was made with `holdQueue`.
        var released: Bool
        var subscription: MemoConnection.SubscriptionHandle?
        /// How many times the whole list was built for `memoList()` (O(N) each), for tests.
        var listBuilds = 0
        /// Each file's latest failure (nil once written); the queue is on disk when both are nil.
        var fileProblems: [String: String] = [:]

        init(mirror: Mirror, released: Bool) {
            self.mirror = mirror
            self.released = released
        }
    }

    /// - Parameters:
    ///   - cachePath: a mirror cache to load now (if it exists) and to write with `saveCache()`.
    ///   - queuePath: the offline write queue to load now (its writes show as pending) and to keep; the not-saved
    ///     list is kept beside it. A queue written under another identity is left on disk untouched, and this
    ///     store then keeps no queue (`queueProblem` says why).
    ///   - identity: the identity the queue is bound to; default: the client's server and certificate.
    ///   - holdQueue: send nothing from the queue until `releaseQueue()`.
    /// - Throws: `MemoError.storage` for a damaged cache or queue file; `TLSError` when the certificate cannot be
    ///   read for its fingerprint.
    public init(
        client: MemoConnection, cachePath: String? = nil, queuePath: String? = nil, identity: ClientIdentity? = nil,
        holdQueue: Bool = false
    ) throws {
        self.client = client
        self.cachePath = cachePath
        var initial = Mirror()
        var cachedRole: Role?
        let identity = try queuePath.map { _ in try identity ?? ClientIdentity(client.configuration) }
        if let cachePath, let cached = try MirrorCache.load(from: cachePath) {
            initial = Mirror(cachedRevision: cached.revision, memos: cached.memos)
            let fingerprint = try (identity ?? ClientIdentity(client.configuration)).fingerprint
            if cached.fingerprint == fingerprint { cachedRole = cached.role }
        }
        var queue: [(token: UInt64, write: QueuedWrite)] = []
        var notSaved: [NotSavedWrite] = []
        var problem: String?
        var usable = queuePath
        if let queuePath, let identity {
            let loaded = try WriteQueueFile.load(from: queuePath)
            let notSavedPath = NotSavedFile.path(besideQueue: queuePath)
            let refused = try NotSavedFile.load(from: notSavedPath)
            let files: [(path: String, owner: ClientIdentity?, holdsWrites: Bool)] = [
                (queuePath, loaded.identity, !loaded.writes.isEmpty),
                (notSavedPath, refused.identity, !refused.entries.isEmpty),
            ]
            if let (path, owner, _) = files.first(where: { $0.holdsWrites && $0.owner != identity }) {
                problem = "the offline queue \(path) was written by "
                    + (owner.map { "\($0)" } ?? "an older memo-client (no identity recorded)")
                    + ", not \(identity): left untouched, and writes wait for the server"
                usable = nil
            } else {
                for write in loaded.writes { queue.append((initial.addPending(write.pendingForm), write)) }
                notSaved = refused.entries
            }
        }
        self.queuePath = usable
        self.notSavedPath = usable.map { NotSavedFile.path(besideQueue: $0) }
        self.identity = usable == nil ? nil : identity
        state = LoopState(mirror: initial, released: !holdQueue)
        state.queue = queue
        state.notSaved = notSaved
        pendingWrites = Subject(initial.pendingIDs)
        stale = Subject(true)
        hasBase = Subject(initial.hasBase)
        self.notSaved = Subject(notSaved)
        queueProblem = Subject(problem)
        role = Subject(cachedRole)
        // The whole list is built only while someone subscribes to it (O(N) per change); a new subscriber is sent a
        // fresh one, since the value may have been left behind while nobody was subscribed.
        let box = WeakStore()
        list = Subject(initial.list) { box.store?.onLoop { $0.sendList() } }
        var watches: [Subscription] = []
        watches.append(client.role.subscribe { role in
            guard let role else { return }
            box.store?.onLoop { store in if store.role.value != role { store.role.send(role) } }
        })
        if usable != nil {
            watches.append(client.connectionState.subscribe { state in
                if state == .live { box.store?.onLoop { $0.drainQueue() } }
            })
        }
        self.watches = watches
        box.store = self
        // What the subscriptions above said before the box was filled: the welcome's role, a connection already live.
        onLoop { store in
            if let role = store.client.role.value ?? nil, store.role.value != role { store.role.send(role) }
            store.drainQueue()
        }
    }

    deinit {
        // Nothing else holds the state any more: reading it here is no race.
        state.subscription?.cancel()
        watches.forEach { $0.cancel() }
    }

    /// Runs `body` on the client's loop, after everything queued there before it.
    func onLoop(_ body: @escaping @Sendable (RemoteStore) -> Void) {
        client.execute { body(self) }
    }

    /// Runs `body` on the client's loop and waits for its result (at once when already on it): for the short reads
    /// and changes of the state the loop owns, the writes' included. Never waits on the network, only on the loop's
    /// current event; a caller must not hold a lock that a handler the loop runs may take (`hasList` and the
    /// subjects never wait). Blocking here rather than suspending: the loop is a thread of its own, so a write made
    /// offline returns as soon as the loop has queued it, however busy the cooperative pool is (a suspended task
    /// must wait for a pool thread to resume it, which a loaded test run made take tens of seconds).
    func onLoopAndWait<Result>(_ body: @escaping (RemoteStore) -> Result) -> Result {
        client.runAndWait { body(self) }
    }

    /// Whether there is a list to show: a cache was loaded or the server sent a snapshot. Never waits (a status
    /// bar reads it while holding its own lock, from handlers the loop runs too).
    public var hasList: Bool { hasBase.value ?? false }

    /// The last revision the mirror applied.
    public var revision: UInt64 { onLoopAndWait { $0.state.mirror.revision } }

    /// The mirror's state, copied.
    public var snapshot: Mirror { onLoopAndWait { $0.state.mirror } }

    /// How many times the whole list was built for `memoList()` (each O(N)): for tests that check a change costs
    /// less when nobody holds the list.
    public var wholeListBuilds: Int { onLoopAndWait { $0.state.listBuilds } }

    /// Starts mirroring (subscribing on this and every later connection). `memoList()` calls it.
    public func startMirror() {
        onLoopAndWait { $0.startMirrorOnLoop() }
    }

    /// `startMirror()`'s work, on the loop: a caller that also reads the mirror in the same event sees it as it
    /// was before any answer to the subscription.
    private func startMirrorOnLoop() {
        guard state.subscription == nil else { return }
        let box = WeakStore(self)
        // Both run on the loop: where to start, and each read's events.
        state.subscription = client.subscribe(
            start: { box.store?.state.mirror.resumeRevision },
            handler: { events in box.store?.received(events) })
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

    /// Writes the mirror (as the server last confirmed it) to `cachePath`, mode 0600, with the role the server
    /// gave our certificate (so that a read-only certificate is read-only offline too).
    public func saveCache() throws {
        guard let cachePath else { return }
        let contents: MirrorCache.Contents? = onLoopAndWait { store in
            guard store.state.mirror.hasBase else { return nil }
            return MirrorCache.Contents(
                revision: store.state.mirror.revision, memos: store.state.mirror.table.list,
                role: store.role.value ?? nil, fingerprint: "")
        }
        guard var contents else { return }
        contents.fingerprint = try (identity ?? ClientIdentity(client.configuration)).fingerprint
        try MirrorCache.save(contents, to: cachePath)
    }

    // MARK: - On the loop

    /// Tells the observers what a change of the mirror did, in order: the edits for list watchers, the whole list
    /// while someone subscribes to `memoList()` (building it is O(N)), the pending ids.
    func show(_ delta: ListDelta?) {
        let pendingIDs = state.mirror.pendingIDs
        if let delta {
            deltas.send(delta)
            if list.subscriberCount > 0 { sendList() }
        }
        // A write can leave the pending set without changing the list (a create and its delete, both applied).
        if pendingWrites.value != pendingIDs { pendingWrites.send(pendingIDs) }
    }

    /// Builds the whole list and sends it to `memoList()`'s subject.
    func sendList() {
        state.listBuilds += 1
        list.send(state.mirror.list)
    }

    /// Changes the pending writes about `id` and tells the observers what that did to the list.
    @discardableResult
    func changeShown<Result>(_ id: UUID?, _ body: (inout Mirror) -> Result) -> Result {
        let (result, delta) = state.mirror.changeShowing(id, body)
        show(delta)
        return result
    }

    /// One read's events, in order.
    private func received(_ batch: [SubscriptionEvent]) {
        let (events, delta) = state.mirror.applyShowing(batch)
        show(delta)
        for event in events {
            switch event {
            case .changes(let applied):
                for change in applied { changes.send(change) }
            case .resubscribe:
                state.subscription?.restart()
            case .reset, .fresh, .failed:
                break
            }
            self.events.send(event)
        }
        if hasBase.value != state.mirror.hasBase { hasBase.send(state.mirror.hasBase) }
        if stale.value != state.mirror.isStale { stale.send(state.mirror.isStale) }
    }

    // MARK: - MemoStorage

    /// The whole list, built now, and re-sent after every change while someone holds a subscription to it; a
    /// change costs O(N) only then. Releasing or cancelling the last subscription stops it.
    public func memoList() -> Subject<[Memo]> {
        startMirror()
        onLoopAndWait { $0.sendList() }
        return list
    }

    public func contains(id: UUID) -> Bool {
        onLoopAndWait { $0.state.mirror.shown(id) != nil }
    }

    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        // In one event of the loop: the first delta is the list as it was when watching began (a cache's, before
        // any answer), and every change after it follows. Started in an event of its own, the subscription's answer
        // could be applied between the two, and the watcher never saw the cached list.
        onLoopAndWait { store in
            let subscription = store.deltas.subscribe(prefix: [.reset(store.state.mirror.list)], handler)
            store.startMirrorOnLoop()
            return subscription
        }
    }

    /// How a write starts, decided on the loop.
    enum WriteStart: Sendable {
        /// Not mirroring (or nothing to show): just send it.
        case direct
        /// Queued (offline, or behind queued writes): shown, returned at once.
        case queued(Memo)
        /// Shown as pending with this token while it is sent.
        case shown(UInt64)
    }

    /// Runs a write with its pending form shown until the server answers; with an offline queue, a write made while
    /// not live (or behind queued ones) is queued instead and returns at once, and so is one whose outcome turned out
    /// unknown (it is sent again from the queue).
    private func write(
        _ pendingForm: PendingWrite?, queued: QueuedWrite?, _ body: () async throws -> Memo
    ) async throws -> Memo {
        let start: WriteStart = onLoopAndWait { store in
            guard store.state.subscription != nil, let pendingForm else { return .direct }
            if let queued, let shown = store.enqueueIfOffline(queued) { return .queued(shown) }
            return .shown(store.changeShown(pendingForm.id) { $0.addPending(pendingForm) })
        }
        let token: UInt64
        switch start {
        case .direct: return try await body()
        case .queued(let memo): return memo
        case .shown(let shown): token = shown
        }
        let id = pendingForm!.id
        do {
            let memo = try await body()
            onLoopAndWait { store in store.changeShown(id) { $0.confirm(token, revision: memo.revision) } }
            return memo
        } catch {
            // Sent, and maybe done: not rolled back as failed, but queued to be sent again (safe: a create by its id,
            // an update or delete with its expected revision), shown as pending meanwhile.
            var isUnknown = false
            if case MemoError.outcomeUnknown = error, queued != nil { isUnknown = true }
            let unknown = isUnknown
            let requeued: Memo? = onLoopAndWait { store in
                let requeued = unknown ? queued.flatMap { store.enqueueIfOffline($0, always: true) } : nil
                store.changeShown(id) { $0.reject(token) }
                return requeued
            }
            if let requeued { return requeued }
            throw error
        }
    }

    @discardableResult
    public func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        let id = id ?? UUID.random()
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
        try await update(id: id, content: content, expectedRevision: expectedRevision, merge: false)
    }

    /// See `MemoStorage.update(id:content:expectedRevision:merge:)`. Kept offline, the write is replayed with the
    /// merge flag whatever `merge` was: the edit started from its expected revision, which the server keeps.
    @discardableResult
    public func update(id: UUID, content: String, expectedRevision: UInt64?, merge: Bool) async throws -> Memo {
        // The memo as on screen: a memo made offline is in the pending writes, not yet in the table.
        var shown = onLoopAndWait { $0.state.mirror.shown(id) }
        shown?.content = content
        shown?.updateMicros = Date().unixMicros
        let queued = shown.map {
            QueuedWrite(kind: .update, memo: $0, expectedRevision: expectedRevision, afterQueued: false)
        }
        return try await write(shown.map { .update($0) }, queued: queued) {
            try await client.update(id: id, content: content, expectedRevision: expectedRevision, merge: merge)
        }
    }

    @discardableResult
    public func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        let known = onLoopAndWait { $0.state.mirror.shown(id) }
        let queued = known.map {
            QueuedWrite(kind: .delete, memo: $0, expectedRevision: expectedRevision, afterQueued: false)
        }
        return try await write(known.map { .delete($0) }, queued: queued) {
            try await client.delete(id: id, expectedRevision: expectedRevision, known: known)
        }
    }
}

/// A weak reference to a store for the closures it hands to its subjects and its client (which outlive it
/// otherwise). `@unchecked Sendable`: `store` is set once, in the store's init, before any closure holding the box
/// can run (they run on the loop or after a subscribe, both after the init returns); then only read.
final class WeakStore: @unchecked Sendable {
    weak var store: RemoteStore?

    init(_ store: RemoteStore? = nil) {
        self.store = store
    }
}
