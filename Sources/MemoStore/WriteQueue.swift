import Dispatch
import MemoModel
import Synchronization

/// The writes a durable store's writer thread takes in batches: submitters append and go, the writer waits for
/// work, takes everything waiting (up to a batch) and completes each request once it is durable or has failed.
public final class WriteQueue: Sendable {
    /// One write and what to call with its result.
    public struct Request: Sendable {
        public let op: WriteOp
        public let completion: @Sendable (Result<WriteOutcome, MemoError>) -> Void
        /// When it was queued: a store with a deadline per write (PostgreSQL's) counts from here.
        public let submitted = DispatchTime.now()
    }

    private struct State {
        var requests: [Request] = []
        var closing = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the writer once it has stopped (`writerStopped`).
    private let stopped = DispatchSemaphore(value: 0)

    public init() {}

    /// Queues writes; `completion` runs once with one result per write, in order. After `close` it runs at once
    /// with `closed` for each.
    public func submit(_ ops: [WriteOp], completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void) {
        guard !ops.isEmpty else { return completion([]) }
        let (accepted, wasEmpty) = state.withLock { state in
            guard !state.closing else { return (false, false) }
            let wasEmpty = state.requests.isEmpty
            if ops.count == 1 {
                state.requests.append(Request(op: ops[0], completion: { completion([$0]) }))
            } else {
                let results = BatchResults(count: ops.count, completion: completion)
                for (index, op) in ops.enumerated() {
                    state.requests.append(Request(op: op, completion: { results.set(index, $0) }))
                }
            }
            return (true, wasEmpty)
        }
        if !accepted {
            completion(ops.map { _ in .failure(.closed) })
        } else if wasEmpty {
            // Only a submit that finds the queue empty signals: the writer takes everything waiting each turn.
            wake.signal()
        }
    }

    /// Waits until writes are waiting, the queue is closing, or `deadline` passes, then takes up to `limit` writes.
    /// - Returns: the writes taken, and whether the queue is closing with nothing left (the writer's cue to stop).
    public func take(limit: Int, waitingUntil deadline: DispatchTime = .distantFuture) -> (
        batch: [Request], finished: Bool
    ) {
        let idle = state.withLock { $0.requests.isEmpty && !$0.closing }
        if idle { _ = wake.wait(timeout: deadline) }
        return state.withLock { state in
            let count = min(state.requests.count, limit)
            let batch = Array(state.requests.prefix(count))
            state.requests.removeFirst(count)
            return (batch, state.closing && state.requests.isEmpty)
        }
    }

    /// Refuses later writes and wakes the writer; the writes already queued are still taken.
    /// - Returns: true for the first call only.
    @discardableResult
    public func close() -> Bool {
        let first = state.withLock { state in
            defer { state.closing = true }
            return !state.closing
        }
        if first { wake.signal() }
        return first
    }

    /// The writer's last word, once `take` said it is finished and it has let go of its connection or file.
    public func writerStopped() {
        stopped.signal()
    }

    /// Closes the queue (later writes are refused) and waits until the writer has taken every write already
    /// queued and stopped. Safe to call twice, or from two threads at once: each returns once the writer stopped.
    public func closeAndWaitForWriter() {
        guard close() else { return }
        stopped.wait()
        stopped.signal()  // a second `closeAndWaitForWriter` racing this one also returns
    }
}
