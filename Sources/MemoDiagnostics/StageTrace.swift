import Foundation
import MemoModel
import Synchronization

/// Per-revision timestamps of a change's way through a server, for benchmarks: which stage (commit, notification,
/// feed wake-up, read, apply, fan-out) the delivery delay goes to.
///
/// Off unless the server was started with `MEMO_STAGE_TRACE=FILE` in its environment: then every stage is one
/// entry in memory (no log line, no I/O on the path) and `write()`, called when the server stops, writes them to
/// FILE as `revision stage nanoseconds` lines, the time on CLOCK_MONOTONIC so that the files of several servers
/// and the benchmark client's receipts on one machine compare. Off, a stage costs one load of a constant.
public enum StageTrace {
    /// Where a change is, in the order a cross-server delivery passes the stages; before them, the stages of a
    /// PostgreSQL-backed server's own write (`submitted` to `claimed`, then `committed` and `applied`, then
    /// `answered`: bench/write-stages.py).
    public enum Stage: String, Sendable {
        /// Its write was submitted to the store (recorded with the submission's own time).
        case submitted
        /// The writer sent the call that numbered it (recorded with the time the call was sent).
        case sent
        /// That call returned: committed, not yet claimed durable.
        case returned
        /// The claimer sent the claim that covers it.
        case claimed
        /// The claim that covers it returned: it is committed and durable.
        case committed
        /// The notification that announces it was sent (the writer's server; in the same round trip as the
        /// commit, so recorded with it).
        case notified
        /// The feed woke on a notification announcing it (the other servers).
        case woken
        /// The feed took it from a notification's payload, with no read (the other servers).
        case carried
        /// The feed's read of the changes table returned it (the other servers).
        case read
        /// Applied to the server's table; its observers (the fan-out) have it.
        case applied
        /// A loop began handing it to its subscribers (one entry per loop).
        case fanout
        /// A loop has written it to every subscriber's socket (one entry per loop).
        case written
        /// Its write's answer was handed to its connection's loop (the writer's server, once applied there).
        case answered
    }

    private struct Entry {
        let revision: UInt64
        let stage: Stage
        let nanos: UInt64
    }

    /// The file named by `MEMO_STAGE_TRACE`, or nil: tracing is off.
    public static let path: String? = ProcessInfo.processInfo.environment["MEMO_STAGE_TRACE"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Entries kept at most (a few per change); later ones are dropped rather than growing without bound.
    static let capacity = 4_000_000

    private static let entries = Mutex<[Entry]>([])

    /// Records that `revision` reached `stage` now.
    @inline(__always)
    public static func record(_ stage: Stage, _ revision: UInt64) {
        guard path != nil else { return }
        append(stage, revision, nanos: monotonicNanos())
    }

    /// Records that `revision` reached `stage` at `time`, taken earlier: its place on CLOCK_MONOTONIC is its
    /// distance from now (`DispatchTime` does not promise that clock).
    @inline(__always)
    public static func record(_ stage: Stage, _ revision: UInt64, at time: DispatchTime) {
        guard path != nil else { return }
        let ago = DispatchTime.now().uptimeNanoseconds &- time.uptimeNanoseconds
        append(stage, revision, nanos: monotonicNanos() &- ago)
    }

    private static func append(_ stage: Stage, _ revision: UInt64, nanos: UInt64) {
        entries.withLock { entries in
            if entries.count < capacity { entries.append(Entry(revision: revision, stage: stage, nanos: nanos)) }
        }
    }

    /// Records that every change of `changes` reached `stage` now.
    @inline(__always)
    public static func record(_ stage: Stage, _ changes: [Change]) {
        guard path != nil, !changes.isEmpty else { return }
        let now = monotonicNanos()
        entries.withLock { entries in
            for change in changes where entries.count < capacity {
                entries.append(Entry(revision: change.revision, stage: stage, nanos: now))
            }
        }
    }

    /// Writes the entries recorded so far to the trace file (replacing it); does nothing when tracing is off.
    public static func write() {
        guard let path else { return }
        let text = entries.withLock { entries in
            entries.map { "\($0.revision) \($0.stage.rawValue) \($0.nanos)\n" }.joined()
        }
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }

    /// Nanoseconds on CLOCK_MONOTONIC, which every process on one machine shares.
    public static func monotonicNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
