import Synchronization

/// Something that can be stopped; stopping twice is harmless.
public protocol Cancellable: Sendable {
    func cancel()
}

/// A value that changes over time, pushed to subscribers (an Rx `BehaviorSubject`, or a `PublishSubject` when made
/// without an initial value).
///
/// A subject made with an initial value replays its current value to each new subscriber, then every later value;
/// one made without replays nothing. Each subscriber gets every value in the order `send` was called, exactly
/// once, and never two at a time: each subscriber has its own queue, drained by whichever thread finds it idle,
/// and no lock is held while a handler runs, so a handler may call `send` or `subscribe` itself.
public final class Subject<Value: Sendable>: Sendable {
    private struct Subscriber {
        let handler: @Sendable (Value) -> Void
        var queue = FIFO<Value>()
        var draining = false
    }

    private struct State {
        var current: Value?
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var completed = false
    }

    private let state: Mutex<State>
    private let replays: Bool
    /// Told (outside the lock) each time a subscriber is added: a subject whose value is kept current only while
    /// someone subscribes (`RemoteStore.memoList()`) refreshes it then.
    private let onSubscribe: (@Sendable () -> Void)?
    /// Whether `subscribers` is not empty, kept under the lock and read without it (`hasSubscribers`).
    private let subscribed = Atomic<Bool>(false)

    /// A subject that replays `initial` and then the latest value to each new subscriber.
    public init(_ initial: Value) {
        state = Mutex(State(current: initial))
        replays = true
        onSubscribe = nil
    }

    /// A replaying subject whose owner is told of each new subscriber (after it got the current value), so that an
    /// owner that keeps the value current only while it is subscribed to can send a fresh one.
    package init(_ initial: Value, onSubscribe: @escaping @Sendable () -> Void) {
        state = Mutex(State(current: initial))
        replays = true
        self.onSubscribe = onSubscribe
    }

    /// A subject that replays nothing: subscribers see only values sent after they subscribed.
    public init() {
        state = Mutex(State(current: nil))
        replays = false
        onSubscribe = nil
    }

    /// The latest value sent (or the initial one); nil for a subject that does not replay and has seen nothing.
    public var value: Value? { state.withLock { $0.current } }

    /// Whether anyone subscribes, read without taking the lock: exact for a caller that orders its subscribes
    /// with its own lock and reads this under that lock (a store's change queue: a watcher subscribes under the
    /// store's lock, so a change applied under it is never missing a new watcher); a subscriber that leaves
    /// meanwhile only makes it true a little longer.
    package var hasSubscribers: Bool { subscribed.load(ordering: .relaxed) }

    /// How many subscriptions are live.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Sends `value` to every subscriber, after everything sent before it.
    public func send(_ value: Value) {
        deliver(enqueue(value))
    }

    /// Subscribes `handler`: it first gets `prefix` (in order), then the current value when this subject
    /// replays, then every value sent afterwards. Delivery of what is already there happens before this returns,
    /// unless another thread is delivering to the same subscriber.
    /// - Returns: a subscription; cancelling or releasing it stops delivery and frees the handler. Keep it for as
    ///   long as the values are wanted.
    public func subscribe(
        prefix: [Value] = [],
        _ handler: @escaping @Sendable (Value) -> Void
    ) -> Subscription {
        let (subscription, pending) = subscribeDeferred(prefix: prefix, handler)
        deliver(pending)
        onSubscribe?()
        return subscription
    }

    /// Subscribers that have values waiting and nobody delivering them.
    package struct PendingDelivery {
        fileprivate var ids: [UInt64]

        /// Nothing to deliver.
        package init() { ids = [] }

        fileprivate init(ids: [UInt64]) { self.ids = ids }

        /// Nothing to deliver: no subscriber was waiting for this value (one already draining takes it too).
        package var isEmpty: Bool { ids.isEmpty }
    }

    /// Queues `value` for every subscriber without running a handler, so that a store can queue under its own
    /// lock (keeping revision order) and deliver after releasing it. Whoever delivers, each subscriber gets the
    /// values in the order they were queued: the ordering argument of a store is "queued under my lock".
    package func enqueue(_ value: Value) -> PendingDelivery {
        state.withLock { state in
            guard !state.completed else { return PendingDelivery(ids: []) }
            if replays { state.current = value }
            var ready: [UInt64] = []
            for id in state.subscribers.keys {
                state.subscribers[id]!.queue.append(value)
                if !state.subscribers[id]!.draining {
                    state.subscribers[id]!.draining = true
                    ready.append(id)
                }
            }
            return PendingDelivery(ids: ready)
        }
    }

    /// `subscribe` without delivering: the caller passes the result to `deliver` once it holds no lock.
    package func subscribeDeferred(
        prefix: [Value], _ handler: @escaping @Sendable (Value) -> Void
    ) -> (Subscription, PendingDelivery) {
        let id: UInt64 = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            var subscriber = Subscriber(handler: handler)
            for value in prefix { subscriber.queue.append(value) }
            if let current = state.current, replays { subscriber.queue.append(current) }
            subscriber.draining = true
            state.subscribers[id] = subscriber
            subscribed.store(true, ordering: .relaxed)
            return id
        }
        return (Subscription { [weak self] in self?.remove(id) }, PendingDelivery(ids: [id]))
    }

    /// Runs the handlers of the subscribers `pending` names until their queues are empty.
    package func deliver(_ pending: PendingDelivery) {
        for id in pending.ids { drain(id) }
    }

    /// Ends every subscription; later sends are ignored.
    public func complete() {
        state.withLock { state in
            state.completed = true
            state.subscribers.removeAll()
            subscribed.store(false, ordering: .relaxed)
        }
    }

    private func remove(_ id: UInt64) {
        // The handler is released outside the lock: its deinit may do anything.
        let removed = state.withLock { state in
            defer { subscribed.store(!state.subscribers.isEmpty, ordering: .relaxed) }
            return state.subscribers.removeValue(forKey: id)
        }
        _ = removed
    }

    private func drain(_ id: UInt64) {
        while true {
            let next: (Value, @Sendable (Value) -> Void)? = state.withLock { state in
                // Mutate in place: copying the subscriber out would copy its queue.
                guard let handler = state.subscribers[id]?.handler else { return nil }
                if let value = state.subscribers[id]!.queue.popFirst() { return (value, handler) }
                state.subscribers[id]!.draining = false
                return nil
            }
            guard let (value, handler) = next else { return }
            handler(value)
        }
    }
}

extension Subject {
    /// The subject as an `AsyncSequence`: the values a subscription would get, buffered without bound; ending the
    /// iteration cancels the subscription.
    public var values: AsyncStream<Value> {
        AsyncStream { continuation in
            let subscription = subscribe { continuation.yield($0) }
            continuation.onTermination = { _ in subscription.cancel() }
        }
    }
}

/// A live subscription to a subject, as Combine's `AnyCancellable`: cancelling it (or cancelling twice) stops
/// delivery, and so does releasing it, so that a subscription nobody holds any more cannot keep running (and
/// keep its source doing work for it). Whoever wants the values keeps the subscription.
public final class Subscription: Cancellable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    /// For the package's stores (MemoStore's core), whose watchers are not a subject's.
    package init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    deinit {
        cancel()
    }

    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }
}
