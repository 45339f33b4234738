import Foundation
import MemoDiagnostics
import MemoModel
import Synchronization

/// The part every store shares: the table, the change history, the list subject and the watchers.
///
/// A store plans writes against the table, makes them durable its own way, then applies them here. Applying
/// queues each change for every watcher under the same lock that orders revisions, and delivers after the lock
/// is released, so watchers see changes in revision order and a handler may call back into the store.
public final class StoreState: Sendable {
    private struct Inner {
        var table: MemoTable
        var history: ChangeHistory
        var list: Subject<[Memo]>?
        /// The list as position edits, made on first use: until someone watches, no position is computed.
        var listDeltas: Subject<ListDelta>?
        var closed = false
        var observers: [UInt64: @Sendable (Change) -> Void] = [:]
        var nextObserver: UInt64 = 0
        /// The insert clock of the writes planned here (see `WritePlanner.lastInsertMicros`).
        var lastInsertMicros: Int64
        /// The kept versions and trash, when this state keeps them itself (the memory store); the durable stores
        /// keep theirs in their database and pass their lookup to `plan`.
        var shelf: VersionShelf?
        /// What `MemoTable.warmIndex(for:)` last returned, kept only so that its reads are made.
        var warmth: UInt64 = 0
    }

    private let inner: Mutex<Inner>
    private let events = Subject<WatchEvent>()

    /// - Parameter nowMicros: the real time of opening (not a store's clock, which tests may step on each call).
    ///   The insert clock starts at the latest insert date not after it: dates in the future are a client's (an
    ///   import), not the clock's, and must not move it.
    /// - Parameter versions: the policy of versions and trash this state keeps in memory (the memory store's);
    ///   nil when the store keeps them elsewhere.
    public init(
        table: MemoTable, history: ChangeHistory, nowMicros: Int64 = Date().unixMicros, versions: VersionPolicy? = nil
    ) {
        precondition(table.revision == history.head, "the history must end at the table's revision")
        let clock = table.latestInsert(notAfter: nowMicros)
        inner = Mutex(Inner(
            table: table, history: history, lastInsertMicros: clock,
            shelf: versions.map { VersionShelf(policy: $0, baseRevision: table.revision) }))
    }

    /// The revision of the last applied change.
    public var revision: UInt64 { inner.withLock { $0.table.revision } }

    /// How many memos the table holds.
    public var memoCount: Int { inner.withLock { $0.table.count } }

    /// The oldest revision a watcher can resume from.
    public var oldestResumable: UInt64 { inner.withLock { $0.history.oldestResumable } }

    /// Reads the table under the lock.
    public func read<Result>(_ body: (borrowing MemoTable) throws(MemoError) -> Result) throws(MemoError) -> Result {
        try inner.withLock { inner throws(MemoError) -> Result in
            if inner.closed { throw .closed }
            return try body(inner.table)
        }
    }

    /// The memo with `id`. - Throws: `notFound`, `closed`.
    public func memo(_ id: UUID) throws(MemoError) -> Memo {
        try read { table throws(MemoError) -> Memo in
            guard let memo = table.memo(id) else { throw .notFound(id) }
            return memo
        }
    }

    /// Plans writes against the current table; nothing changes until `apply`.
    /// Only one thread at a time may plan and apply (the store's writer), or plans could collide.
    /// - Parameter lookup: the store's kept versions and trash (for a restore), read on this thread while planning.
    public func plan(
        _ ops: [WriteOp], nowMicros: Int64, lookup: VersionLookup = .none
    ) -> [Result<WriteOutcome, MemoError>] {
        inner.withLock { inner in
            if inner.closed { return ops.map { _ in .failure(.closed) } }
            var planner = WritePlanner(startingAt: inner.table, lastInsertMicros: inner.lastInsertMicros)
            let results = ops.map { op -> Result<WriteOutcome, MemoError> in
                do throws(MemoError) {
                    let lookup = inner.shelf.map { shelfLookup($0, op, in: inner.table) } ?? lookup
                    return .success(try planner.plan(op, in: inner.table, nowMicros: nowMicros, lookup: lookup))
                } catch {
                    return .failure(error)
                }
            }
            // Kept even when the batch then fails: the clock only has to increase.
            inner.lastInsertMicros = planner.lastInsertMicros
            return results
        }
    }

    /// Plans and applies in one step, for a store with nothing to make durable.
    ///
    /// The batch is taken owned and each op is moved out of it, a placeholder with nothing to free swapped into its
    /// slot: a `for` over the array copied every op whole through its value witness (its strings retained) before
    /// planning it, and the array's teardown destroyed each op again. (`reverse()` then `popLast()` moves too, but
    /// the standard library's generic `reverse` copies each element it swaps.)
    public func planAndApply(_ ops: consuming [WriteOp], nowMicros: Int64) -> [Result<WriteOutcome, MemoError>] {
        var ops = ops
        var pending: [Subject<WatchEvent>.PendingDelivery] = []
        var lists = ListDeliveries()
        // Changes the history let go, freed after the lock is released: freeing one under the lock touched cold
        // memory while the other loop waited.
        var evicted: [Change] = []
        let results = inner.withLock { inner in
            if inner.closed { return ops.map { _ -> Result<WriteOutcome, MemoError> in .failure(.closed) } }
            if ops.count > 1 { inner.warmth &+= inner.table.warmIndex(for: ops.lazy.map(\.id)) }
            // Each change is applied before the next write is planned, so the planner needs no overlay.
            var planner = WritePlanner(
                startingAt: inner.table, lastInsertMicros: inner.lastInsertMicros, appliesAsItGoes: true,
                readsVersions: ops.contains { $0.readsVersions })
            var results: [Result<WriteOutcome, MemoError>] = []
            results.reserveCapacity(ops.count)
            var edits: [ListEdit] = []
            var changed = false
            for index in ops.indices {
                var op = WriteOp.delete(id: Self.noID, expectedRevision: nil)
                swap(&op, &ops[index])
                do throws(MemoError) {
                    let lookup = inner.shelf.map { shelfLookup($0, op, in: inner.table) } ?? .none
                    // Its last use: the op's strings move into the planned memo.
                    let outcome = try planner.plan(consume op, in: inner.table, nowMicros: nowMicros, lookup: lookup)
                    // Taken apart and put together again, not matched in place: projecting the change out of a
                    // borrowed outcome copied the whole `Change` (its memo's strings retained) and destroyed the
                    // copy after applying it (~190 instructions per create).
                    switch consume outcome {
                    case .change(let change):
                        let delivery = applyLocked(change, to: &inner, edits: &edits, evicted: &evicted)
                        // Kept when someone waits for it (a watcher still draining takes it with the first): with
                        // nobody watching, no array grows per change.
                        if !delivery.isEmpty { pending.append(delivery) }
                        changed = true
                        results.append(.success(.change(change)))
                    case .existing(let memo):
                        results.append(.success(.existing(memo)))
                    }
                } catch {
                    results.append(.failure(error))
                }
            }
            inner.lastInsertMicros = planner.lastInsertMicros
            if changed { lists = queueLists(in: inner, edits: edits) }
            return results
        }
        deliver(pending, lists)
        return results
    }

    /// The id of the placeholder `planAndApply` leaves in the slot of each op it took out of its batch.
    private static let noID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// Applies changes that were planned (and made durable) in revision order, and tells the watchers.
    public func apply(_ changes: [Change]) {
        guard !changes.isEmpty else { return }
        var evicted: [Change] = []
        let (pending, lists) = inner.withLock { inner in
            var pending: [Subject<WatchEvent>.PendingDelivery] = []
            pending.reserveCapacity(changes.count)
            var edits: [ListEdit] = []
            for change in changes {
                pending.append(applyLocked(change, to: &inner, edits: &edits, evicted: &evicted))
            }
            return (pending, queueLists(in: inner, edits: edits))
        }
        StageTrace.record(.applied, changes)
        deliver(pending, lists)
    }

    /// Applies one change to the table and the history, tells the observers and queues it for the watchers;
    /// when someone watches the list's positions, adds the change's edit to `edits` (O(log N)).
    private func applyLocked(
        _ change: Change, to inner: inout Inner, edits: inout [ListEdit], evicted: inout [Change]
    ) -> Subject<WatchEvent>.PendingDelivery {
        // A change keeps the memo's insert date, so its key finds the old place as well as the new.
        if inner.listDeltas != nil, change.kind == .deleted {
            edits.append(.remove(change.memo, at: inner.table.countNewer(than: change.memo)))
        }
        // Before the table changes: a memo's first version is its row until then (`VersionShelf`).
        inner.shelf?.record(change, in: inner.table)
        inner.table.apply(change)
        if inner.listDeltas != nil, change.kind != .deleted {
            let position = inner.table.countNewer(than: change.memo)
            let memo = change.memo
            edits.append(change.kind == .created ? .insert(memo, at: position) : .update(memo, at: position))
        }
        if let oldest = inner.history.append(change) {
            // Room for a batch at once, rather than growing through 1, 2, 4, 8 and 16 for each full batch.
            if evicted.capacity == 0 { evicted.reserveCapacity(16) }
            evicted.append(oldest)
        }
        for observer in inner.observers.values { observer(change) }
        // Queued only when someone watches (read under this lock, which every watcher subscribes under): the
        // event was a copy of the change (its memo's strings retained) made and destroyed for every write.
        guard events.hasSubscribers else { return .init() }
        return events.enqueue(.change(change))
    }

    /// The lookup a write planned against a state that keeps its versions gets: none for a write that reads no
    /// version (most), so that a create builds no closure; otherwise the shelf's, with the write's memo's row.
    private func shelfLookup(_ shelf: VersionShelf, _ op: WriteOp, in table: borrowing MemoTable) -> VersionLookup {
        op.readsVersions ? shelf.lookup(row: table.memo(op.id)) : .none
    }

    /// The list subjects' deliveries for one batch, queued under the lock with the subjects that will send them.
    private struct ListDeliveries {
        var list: (Subject<[Memo]>, Subject<[Memo]>.PendingDelivery)?
        var delta: (Subject<ListDelta>, Subject<ListDelta>.PendingDelivery)?
    }

    /// Queues a batch's list deliveries: the whole list is built once per batch, and only when someone holds the
    /// list subject; the position edits only when someone watches them.
    private func queueLists(in inner: borrowing Inner, edits: [ListEdit]) -> ListDeliveries {
        var lists = ListDeliveries()
        if let subject = inner.list { lists.list = (subject, subject.enqueue(inner.table.list)) }
        if !edits.isEmpty, let subject = inner.listDeltas { lists.delta = (subject, subject.enqueue(.edits(edits))) }
        return lists
    }

    private func deliver(_ pending: [Subject<WatchEvent>.PendingDelivery], _ lists: ListDeliveries) {
        for delivery in pending { events.deliver(delivery) }
        if let (subject, delivery) = lists.list { subject.deliver(delivery) }
        if let (subject, delivery) = lists.delta { subject.deliver(delivery) }
    }

    /// See `MemoStorage.watchList`. The reset is read and the watcher added under the lock that orders changes,
    /// so it gets every change after its reset and none before.
    public func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        let (subject, subscription, pending) = inner.withLock { inner in
            let subject = inner.listDeltas ?? Subject<ListDelta>()
            inner.listDeltas = subject
            let (subscription, pending) = subject.subscribeDeferred(prefix: [.reset(inner.table.list)], handler)
            return (subject, subscription, pending)
        }
        subject.deliver(pending)
        return subscription
    }

    /// The whole-list subject (`MemoStorage.memoList()`), made on first use.
    public func memoList() -> Subject<[Memo]> {
        inner.withLock { inner in
            if let list = inner.list { return list }
            let list = Subject(inner.table.list)
            inner.list = list
            return list
        }
    }

    /// The current memos and their revision.
    public func snapshot() -> (revision: UInt64, memos: [Memo]) {
        inner.withLock { ($0.table.revision, $0.table.list) }
    }

    /// See `ChangeFeed.page(after:limit:)`.
    public func page(after cursor: ListCursor?, limit: Int) -> ListPage {
        inner.withLock { inner in
            let (memos, more) = inner.table.page(after: cursor, limit: limit)
            return ListPage(revision: inner.table.revision, memos: memos, more: more)
        }
    }

    /// See `VersionReading.history`, for a state that keeps its versions (the memory store).
    /// - Throws: `notFound` for an id it knows nothing of, `closed`.
    public func history(id: UUID, limit: Int, before: UInt64?) throws(MemoError) -> VersionPage {
        try inner.withLock { inner throws(MemoError) -> VersionPage in
            if inner.closed { throw .closed }
            let row = inner.table.memo(id)
            guard let shelf = inner.shelf else {
                if row != nil { return VersionPage(versions: [], more: false) }
                throw .notFound(id)
            }
            return try shelf.history(id: id, limit: limit, before: before, row: row)
        }
    }

    /// How many versions the shelf holds apart from the table's rows (the memory store's), for tests.
    var shelvedVersions: Int { inner.withLock { $0.shelf?.count ?? 0 } }

    /// See `VersionReading.trash`, for a state that keeps its versions (the memory store).
    public func trash(limit: Int, before: UInt64?) throws(MemoError) -> TrashPage {
        try inner.withLock { inner throws(MemoError) -> TrashPage in
            if inner.closed { throw .closed }
            return inner.shelf?.trash(limit: limit, before: before) ?? TrashPage(entries: [], more: false)
        }
    }

    /// Purges what the kept trash holds from before `cutoffMicros` (the memory store's pass). - Returns: how many.
    @discardableResult
    public func purgeTrash(deletedBefore cutoffMicros: Int64) -> Int {
        inner.withLock { $0.shelf?.purge(deletedBefore: cutoffMicros) ?? 0 }
    }

    /// See `ChangeFeed.observeChanges`.
    public func observeChanges(_ handler: @escaping @Sendable (Change) -> Void) -> Subscription {
        let id = inner.withLock { inner in
            defer { inner.nextObserver += 1 }
            inner.observers[inner.nextObserver] = handler
            return inner.nextObserver
        }
        return Subscription { [weak self] in
            _ = self?.inner.withLock { $0.observers.removeValue(forKey: id) }
        }
    }

    /// See `ChangeFeed.changes(after:limit:)`.
    public func changes(after revision: UInt64, limit: Int = .max) throws(MemoError)
        -> (head: UInt64, changes: [Change])
    {
        try inner.withLock { inner throws(MemoError) -> (head: UInt64, changes: [Change]) in
            if inner.closed { throw .closed }
            return (inner.table.revision, try inner.history.changes(after: revision, limit: limit))
        }
    }

    /// See `ChangeFeed.watch`.
    public func watch(from start: WatchStart, _ handler: @escaping @Sendable (WatchEvent) -> Void) -> Subscription {
        let (subject, subscription, pending) = inner.withLock { inner in
            var prefix: [WatchEvent]
            var live = true
            switch start {
            case .snapshot:
                prefix = [.snapshot(revision: inner.table.revision, memos: inner.table.list)]
            case .after(let revision):
                do throws(MemoError) {
                    let changes = try inner.history.changes(after: revision)
                    prefix = [.resumed(head: inner.table.revision)]
                    prefix.append(contentsOf: changes.map { .change($0) })
                } catch {
                    prefix = [.historyGone(requested: revision, oldestAvailable: inner.history.oldestResumable)]
                    live = false
                }
            }
            // A gone history ends the watch: its one event goes through a subject of its own.
            let subject = live ? events : Subject<WatchEvent>()
            let (subscription, pending) = subject.subscribeDeferred(prefix: prefix, handler)
            return (subject, subscription, pending)
        }
        subject.deliver(pending)
        return subscription
    }

    /// Replaces the table and the history with a fresh snapshot (a server that fell behind its shared database
    /// reloads), skipping the changes in between: the change observers are not called for it (their owner, the
    /// server, let its subscribers go first), a watcher gets `historyGone` for the revision it was at, and the
    /// list subjects get the new list (the position edits as a `.reset`). Not for a state that keeps its versions
    /// (the memory store, which never reloads): its shelf reads unchanged memos' versions from the table's rows.
    public func reload(table: MemoTable, history: ChangeHistory) {
        precondition(table.revision == history.head, "the history must end at the table's revision")
        var pending: [Subject<WatchEvent>.PendingDelivery] = []
        var lists = ListDeliveries()
        inner.withLock { inner in
            precondition(inner.shelf == nil, "a state that keeps its versions is not reloaded")
            guard !inner.closed else { return }
            let before = inner.table.revision
            inner.table = table
            inner.history = history
            pending.append(events.enqueue(
                .historyGone(requested: before, oldestAvailable: inner.history.oldestResumable)))
            if let subject = inner.list { lists.list = (subject, subject.enqueue(inner.table.list)) }
            if let subject = inner.listDeltas { lists.delta = (subject, subject.enqueue(.reset(inner.table.list))) }
        }
        deliver(pending, lists)
    }

    /// Stops the store: later calls fail with `closed`, watchers stop.
    public func close() {
        let (list, deltas) = inner.withLock { inner in
            inner.closed = true
            return (inner.list, inner.listDeltas)
        }
        events.complete()
        list?.complete()
        deltas?.complete()
    }
}
