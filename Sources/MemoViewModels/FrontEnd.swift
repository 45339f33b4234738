import MemoNet

/// The front end's one owner: view models, the coordinator and the terminal are isolated to this global actor,
/// whose executor is one MemoNet event loop (`FrontEnd.loop`). The same loop watches the terminal's input and a
/// signalfd (MemoTUI registers them), so keys, signals, the store's deliveries and every view-model change run
/// on one thread, in the order they arrived, with no lock between them; the compiler checks that nothing
/// touches that state from elsewhere.
///
/// What crosses in: the store's mirror updates and the connection status come from the client's own loop, and
/// are hopped here with `FrontEnd.hop` (one FIFO queue, so a store's deliveries keep their order). What goes
/// out: writes are `async` calls on the store, run as child tasks (`Task { @FrontEnd in … }`), so an unanswered
/// request never holds up a key.
@globalActor
public actor FrontEnd {
    public static let shared = FrontEnd()

    /// The event loop the front end runs on, started on first use and kept for the life of the process.
    public static let loop: EventLoop = {
        do {
            return try EventLoop.start(name: "memo.frontend")
        } catch {
            // Only at start-up, when the process has no descriptor left for epoll: nothing could run.
            fatalError("memo: cannot start the front end's event loop: \(error)")
        }
    }()

    private static let executor = LoopExecutor(loop: loop)

    public nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }

    /// Queues `work` on the front end's loop, after everything queued before it (from any thread).
    public static func hop(_ work: @escaping @FrontEnd @Sendable () -> Void) {
        loop.execute { assumeIsolated(work) }
    }

    /// Runs `operation` as front-end code when called on the front end's loop thread (an event handler the loop
    /// calls, a subject's handler run by front-end code); stops the program anywhere else.
    public static func assumeIsolated<T>(_ operation: @FrontEnd () throws -> T) rethrows -> T {
        typealias Isolated = @FrontEnd () throws -> T
        typealias Plain = () throws -> T
        precondition(loop.inEventLoop, "front-end code called off the front end's loop")
        return try withoutActuallyEscaping(operation) { isolated in
            // Safe: the precondition above checked that this thread is the loop's, which is the actor's executor.
            try unsafeBitCast(isolated, to: Plain.self)()
        }
    }

    /// Returns once everything queued on the loop before the call has run (the store's deliveries, hops):
    /// for tests and the benchmark, which wait for the front end instead of sleeping.
    public static func drained() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { done.resume() }
        }
    }
}

/// A serial executor that runs jobs as work on one event loop.
final class LoopExecutor: SerialExecutor {
    let loop: EventLoop

    init(loop: EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Lets `FrontEnd.preconditionIsolated()` and friends accept code called by the loop itself, outside a job.
    func checkIsolated() {
        precondition(loop.inEventLoop, "not on the front end's event loop \(loop.name)")
    }
}
