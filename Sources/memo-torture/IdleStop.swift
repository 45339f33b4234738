import Foundation

/// How `stop-feed-backend` and `stop-writer-backend` stop a memo-server's PostgreSQL backend: as a connection that
/// hangs, not as a PostgreSQL that hangs. A backend stopped at an arbitrary instant may hold what every session
/// shares: the head row lock inside `memo_write` (every server's writes then wait for it), or one of PostgreSQL's
/// own shared-memory locks (a lock-manager partition while its commit wakes a waiter: then even new connections
/// hang in authentication). No server can take those back from a stopped process (`pg_terminate_backend`'s
/// SIGTERM waits for the SIGCONT too); that is `stop-postgres`, with no healthy server. So the backend is stopped,
/// and kept stopped only when PostgreSQL shows it waiting for its client's next command outside any transaction
/// (`state` idle, `wait_event` ClientRead: it holds no lock); otherwise it is continued at once and tried again.
enum IdleStop {
    /// What `isIdle` asks PostgreSQL about the stopped backend: "t" when it waits idle for its client.
    static func query(_ pid: Int32) -> String {
        "SELECT state = 'idle' AND wait_event = 'ClientRead' FROM pg_stat_activity WHERE pid = \(pid)"
    }

    /// Stops `pid` (SIGSTOP) at a moment it waits idle for its client, trying until `deadline`.
    /// - Parameter isIdle: runs `query(pid)` against the cluster and says whether it answered "t"; false when it
    ///   gave no answer within a short timeout (a stopped backend holding a shared lock can hang the query).
    /// - Returns: whether `pid` is left stopped, idle; when false it is left running.
    static func stop(_ pid: Int32, until deadline: ContinuousClock.Instant, isIdle: (Int32) -> Bool) -> Bool {
        while ContinuousClock.now < deadline {
            guard kill(pid, SIGSTOP) == 0 else { return false }
            if waitStopped(pid, until: deadline), isIdle(pid) { return true }
            kill(pid, SIGCONT)
            // Another instant of its work: a few milliseconds on, not in step with its own rhythm.
            usleep(UInt32.random(in: 2_000...20_000))
        }
        return false
    }

    /// Whether `pid` shows as stopped (`T` in /proc/PID/stat) before `deadline`: kill queues the signal, the
    /// process stops at its next entry into the kernel.
    private static func waitStopped(_ pid: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        while ContinuousClock.now < deadline {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // After "pid (comm) " comes the state.
            if stat[stat.index(after: close)...].split(separator: " ").first == "T" { return true }
            usleep(200)
        }
        return false
    }
}
