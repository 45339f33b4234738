internal import CMemoLinux
import Glibc
import Synchronization

/// One thread running an epoll loop: readiness for registered descriptors, work queued from any thread, and
/// timers.
///
/// Readiness is level-triggered (see `EventHandler`). `execute`, `schedule` and `shutdownGracefully` may be
/// called from any thread; `register`, `setInterest` and `deregister` only on the loop's thread (use `execute`
/// to get there).
public final class EventLoop: Sendable {
    /// The thread's name.
    public let name: String

    let epollFD: Int32
    private let wakeFD: Int32
    private let queue = Mutex(Queue())
    let threadID = Atomic<UInt>(0)
    private let thread = Mutex<LoopThread?>(nil)
    let cancellations = Cancellations()
    let local: ThreadConfined<LoopState>
    /// Driven by hand (`EventLoop.embedded`): no thread, no epoll, a clock that moves only when told.
    let isEmbedded: Bool

    /// Work queued by `execute`, guarded by `queue`.
    private struct Queue: ~Copyable {
        var tasks: [@Sendable () -> Void] = []
        /// An eventfd write is on its way, so later `execute` calls need not write again.
        var wakePending = false
        var phase = Phase.running
    }

    private enum Phase {
        case running, stopping, stopped
    }

    /// The `epoll_event` data word of the eventfd; registrations count up from 1.
    private static let wakeID: UInt64 = 0
    private static let maxEvents = 512

    init(name: String, embedded: Bool = false) throws(NetError) {
        self.name = name
        isEmbedded = embedded
        epollFD = try Syscall.call("epoll_create1") { epoll_create1(LinuxAPI.epollFlags) }
        do {
            wakeFD = try Syscall.call("eventfd") { eventfd(0, LinuxAPI.eventFDFlags) }
        } catch {
            Syscall.close(epollFD)
            throw error
        }
        local = ThreadConfined(LoopState())
        try control(EPOLL_CTL_ADD, fd: wakeFD, mask: LinuxAPI.EPOLLIN, id: EventLoop.wakeID)
    }

    /// Creates a loop and starts its thread.
    /// - Throws: `NetError` when epoll or the eventfd cannot be created (descriptor limit).
    public static func start(name: String) throws(NetError) -> EventLoop {
        let loop = try EventLoop(name: name)
        let thread = LoopThread.spawn(name: name) { loop.run() }
        loop.thread.withLock { $0 = thread }
        return loop
    }

    /// Creates a loop without a thread of its own: the thread that calls `runOnCallingThread()` runs it. For a
    /// program whose one thread has nothing else to do while the loop works (memo-client's one-request
    /// commands, whose task's jobs are queued on the loop too, so that no step wakes another thread).
    /// - Throws: `NetError` when epoll or the eventfd cannot be created (descriptor limit).
    public static func forCallingThread(name: String) throws(NetError) -> EventLoop {
        try EventLoop(name: name)
    }

    /// Runs a loop made by `forCallingThread` on the calling thread, until `shutdownGracefully()` is called
    /// (from any thread: on this one it only asks, and this returns once the loop has finished). Call once.
    public func runOnCallingThread() {
        precondition(thread.withLock { $0 == nil } && !isEmbedded, "event loop \(name) has a thread of its own")
        run()
    }

    deinit {
        Syscall.close(wakeFD)
        Syscall.close(epollFD)
    }

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        pthread_equal(pthread_self(), threadID.load(ordering: .acquiring)) != 0
    }

    /// Stops with a message unless on the loop's thread.
    @inline(__always)
    func preconditionInEventLoop(_ function: StaticString = #function) {
        precondition(inEventLoop, "\(function) must be called on event loop \(name)'s thread")
    }

    /// Runs `work` on the loop's thread, after the work queued before it.
    ///
    /// Callable from any thread. Queued work is run in batches, one eventfd write per batch. Work queued after
    /// `shutdownGracefully()` has finished the loop is dropped without running.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let mustWake = queue.withLock { queue -> Bool in
            guard queue.phase != .stopped else { return false }
            queue.tasks.append(work)
            if queue.wakePending { return false }
            queue.wakePending = true
            return true
        }
        if mustWake { wake() }
    }

    /// Stops the loop once the work queued so far has run, calls `hangup()` on every handler still registered,
    /// drops pending timers, and waits for the thread to end.
    ///
    /// From the loop's own thread this only asks the loop to stop; it cannot wait for itself. Only the first call
    /// from outside waits; later ones return at once.
    public func shutdownGracefully() {
        let mustWake = queue.withLock { queue -> Bool in
            guard queue.phase == .running else { return false }
            queue.phase = .stopping
            return true
        }
        if mustWake { wake() }
        if inEventLoop { return }
        let thread = thread.withLock { thread -> LoopThread? in
            defer { thread = nil }
            return thread
        }
        thread?.join()
    }

    /// How many `execute` jobs wait (an embedded loop runs them in `run()`).
    var queuedWorkCount: Int { queue.withLock { $0.tasks.count } }

    func wake() {
        var one: UInt64 = 1
        // EAGAIN means the counter is already non-zero: the loop will wake anyway.
        _ = try? Syscall.nonBlocking("write(eventfd)") { Glibc.write(wakeFD, &one, 8) }
    }

    func control(_ operation: Int32, fd: Int32, mask: UInt32, id: UInt64) throws(NetError) {
        var event = epoll_event(events: mask, data: epoll_data_t(u64: id))
        try Syscall.call("epoll_ctl") { epoll_ctl(epollFD, operation, fd, &event) }
    }

    // MARK: - The loop

    private func run() {
        threadID.store(pthread_self(), ordering: .releasing)
        let state = local.value
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: EventLoop.maxEvents)
        defer { events.deallocate() }
        var stopping = false
        while !stopping {
            let timeout = state.timers.nextDeadline.map { Monotonic.millisecondsUntil($0) } ?? -1
            let count = epoll_wait(epollFD, events, Int32(EventLoop.maxEvents), timeout)
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                fatalError("epoll_wait on \(name): \(NetError(errno: code, operation: "epoll_wait"))")
            }
            for index in 0..<Int(count) {
                let event = events[index]
                if event.data.u64 == EventLoop.wakeID {
                    stopping = runQueuedWork()
                } else {
                    state.dispatch(event.events, to: event.data.u64)
                }
            }
            fireDueTimers(state)
        }
        finish(state)
        // A later thread may be given the same pthread_t; it must not pass for this loop's thread.
        threadID.store(0, ordering: .releasing)
    }

    /// Runs one batch of queued work. Returns true when the loop should stop.
    func runQueuedWork() -> Bool {
        var counter: UInt64 = 0
        _ = try? Syscall.nonBlocking("read(eventfd)") { Glibc.read(wakeFD, &counter, 8) }
        let (tasks, stopping) = queue.withLock { queue in
            defer { queue.tasks.removeAll(keepingCapacity: true) }
            queue.wakePending = false
            return (queue.tasks, queue.phase == .stopping)
        }
        for task in tasks { task() }
        return stopping
    }

    private func fireDueTimers(_ state: LoopState) {
        guard !state.timers.isEmpty else { return }
        let cancelled = cancellations.count.load(ordering: .relaxed)
        if cancelled > 1024 && cancelled > state.timers.count / 2 {
            cancellations.count.store(0, ordering: .relaxed)
            state.timers.removeCancelled()
        }
        let now = Monotonic.now()
        let mark = state.timers.sequenceMark
        while let entry = state.timers.popDue(now: now, before: mark) {
            if entry.handle.claimFiring() { entry.work() }
        }
    }

    /// Runs the last queued work, tells remaining handlers to hang up and drops timers, on the loop's thread.
    func finish(_ state: LoopState) {
        while true {
            let tasks = queue.withLock { queue in
                defer { queue.tasks.removeAll() }
                if queue.tasks.isEmpty { queue.phase = .stopped }
                return queue.tasks
            }
            if tasks.isEmpty { break }
            for task in tasks { task() }
        }
        for id in state.registrations.keys.sorted() {
            state.registrations[id]?.handler.hangup()
        }
        for (_, entry) in state.registrations {
            _ = try? control(EPOLL_CTL_DEL, fd: entry.fd, mask: 0, id: 0)
        }
        state.registrations.removeAll()
        state.timers.removeAll()
    }
}
