import Dispatch

extension EventLoop {
    /// Runs `work` on this loop's thread and waits for its result; for setup and shutdown from other threads
    /// (work that must run on the loop, such as registering a descriptor). Runs at once when already on it.
    /// - Throws: what `work` throws (nothing when it cannot throw).
    public func runAndWait<Result, Failure: Error>(
        _ work: @escaping () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if inEventLoop { return try work() }
        let job = WaitedJob(work)
        execute { job.run() }
        job.done.wait()
        return try job.result!.get()
    }
}

/// One piece of work handed to a loop and waited for.
// @unchecked Sendable: `work` runs exactly once, on the loop's thread, and writes `result` before signalling
// `done`; the waiting thread reads `result` only after `done` is signalled.
private final class WaitedJob<Result, Failure: Error>: @unchecked Sendable {
    let work: () throws(Failure) -> Result
    var result: Swift.Result<Result, Failure>?
    let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping () throws(Failure) -> Result) {
        self.work = work
    }

    func run() {
        do throws(Failure) {
            result = .success(try work())
        } catch {
            result = .failure(error)
        }
        done.signal()
    }
}
