import Dispatch
import Synchronization

/// Runs a command's task on the process's main thread, which would otherwise only wait.
///
/// Why: a script starts memo-client once per memo, and the global concurrent executor starts Dispatch threads (a
/// worker or two and Dispatch's manager) for a command whose work is a few hops between its task and the client's
/// event loop thread. With this executor as the task's preference, its jobs (and the nonisolated async functions it
/// calls, and the continuations the loop thread resumes) run here instead (BENCHMARKS.md, "A script's command").
/// Jobs run one at a time, in the order they came, so it serves only commands in which no job blocks while another
/// must run (`runsOnTheMainThread` in main.swift says which; the client's own blocking waits are for the event loop
/// thread, `EventLoop.runAndWait`).
final class MainThreadExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    /// Runs jobs as they come, for ever (the task ends the process with `exit`).
    func run() -> Never {
        var next = 0
        var taken: [UnownedJob] = []
        while true {
            ready.wait()
            if next == taken.count {
                taken = jobs.withLock { queued in
                    defer { queued.removeAll(keepingCapacity: true) }
                    return queued
                }
                next = 0
            }
            let job = taken[next]
            next += 1
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
