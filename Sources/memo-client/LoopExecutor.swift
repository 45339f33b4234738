import MemoNet

/// Runs a command's task as jobs on the event loop that its connection runs on, on the process's main thread.
///
/// Why: a script starts memo-client once per memo. With the task on one thread and the loop on another, each step
/// of a command (connect, welcome, request, answer, close) handed work across threads, a wake-up the scheduler may
/// delay on a loaded machine; with the global executor, Dispatch's threads came too. Here the loop runs on the
/// main thread (`EventLoop.forCallingThread`) and this executor, the task's preference, queues the task's jobs
/// (and the nonisolated async functions it calls, and the continuations the loop's callbacks resume) on that loop,
/// so the whole command runs on one thread and starts none (BENCHMARKS.md, "A script's command").
/// Jobs run one at a time, in order, between the loop's events, so it serves only commands in which no job blocks
/// (`runsOnTheMainThread` in main.swift says which): a job that waited for the loop would wait for itself.
final class LoopExecutor: TaskExecutor {
    let loop: EventLoop

    init(loop: EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
