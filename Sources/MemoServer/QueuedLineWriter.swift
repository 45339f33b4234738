import Dispatch
import Foundation
import MemoSystem
import Synchronization

/// Lines for a file descriptor whose reader may stop taking them (standard error piped to a `tee` or a journal that
/// stopped reading, a terminal held with Ctrl-S): a thread of its own writes them, so that a thread serving clients
/// never waits for that reader. Before, a log line written from an event loop into a full pipe held the loop, and
/// once the pipe's 64 KiB had filled every loop was held: the server answered nobody.
///
/// Lines wait in order, up to `capacity` bytes. Past that a new line is dropped and counted, and once the reader
/// takes lines again the line the writer's `notice` makes says how many were lost, in their place.
final class QueuedLineWriter: Sendable {
    private struct State {
        var lines: [String] = []
        var bytes = 0
        var dropped = 0
        /// Makes the line that reports `dropped` (the log's format), from the last line dropped.
        var notice: (@Sendable (Int) -> String)?
        /// Lines queued so far, and lines written (or failed) so far: `flush` waits for the second to reach the first.
        var queued = 0
        var written = 0
        var stopping = false
    }

    let fd: Int32
    let capacity: Int
    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)
    private let progressed = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    /// The bytes of lines that wait by default: about 7,000 connection lines, several seconds of a busy server.
    static let defaultCapacity = 1 << 20

    init(fd: Int32, capacity: Int = QueuedLineWriter.defaultCapacity, name: String = "memo-log") {
        self.fd = fd
        self.capacity = capacity
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.start()
    }

    /// Queues `line` (with its newline), or drops it when `capacity` bytes already wait; never blocks on the reader.
    /// - Parameter notice: the line that reports a number of dropped lines, should this one be dropped.
    func write(_ line: String, notice: @escaping @Sendable (Int) -> String) {
        let first = state.withLock { state -> Bool in
            let size = line.utf8.count
            guard state.bytes + size <= capacity || state.lines.isEmpty else {
                state.dropped += 1
                state.notice = notice
                return false
            }
            state.lines.append(line)
            state.bytes += size
            state.queued += 1
            return state.lines.count == 1
        }
        // Only the first line of a batch wakes the thread: the others find it awake, or about to take them all.
        if first { ready.signal() }
    }

    /// Waits until every line queued before the call is written, or `deadline` passes.
    /// - Returns: whether they were written.
    @discardableResult
    func flush(until deadline: DispatchTime) -> Bool {
        let target = state.withLock { $0.queued }
        while state.withLock({ $0.written < target }) {
            if progressed.wait(timeout: deadline) == .timedOut { return state.withLock { $0.written >= target } }
        }
        return true
    }

    /// Writes what waits, ends the thread and returns when it has ended: the descriptor may then be closed (the
    /// process's own writer is never stopped: tests stop theirs).
    func stop() {
        state.withLock { $0.stopping = true }
        ready.signal()
        ended.wait()
    }

    private func run() {
        defer { ended.signal() }
        while true {
            ready.wait()
            let (lines, dropped, notice, stopping) = state.withLock { state in
                defer {
                    state.lines = []
                    state.bytes = 0
                    state.dropped = 0
                }
                return (state.lines, state.dropped, state.notice, state.stopping)
            }
            guard !lines.isEmpty else {
                if stopping { return }
                continue
            }
            // The lines dropped came after these (a line is dropped only while the queue is full).
            var text = lines.joined()
            if dropped > 0, let notice { text += notice(dropped) }
            // A line that cannot be written (the reader went away: EPIPE) has nowhere to report that either.
            try? FileDescriptor.writeAll(fd, text)
            state.withLock { $0.written += lines.count }
            progressed.signal()
            if stopping { return }
        }
    }
}
