import Dispatch
import MemoDiagnostics
import Synchronization

/// How one of a server's PostgreSQL connections (the writer, the claimer or the feed) is opened, lost and opened again:
/// with backoff, and with one log line per transition rather than one per failed attempt.
final class PostgresLink: Sendable {
    private struct State {
        var down = false
        var delayMillis = PostgresLink.firstDelayMillis
        var nextAttempt = DispatchTime.now()
        var lastError = ""
    }

    static let firstDelayMillis = 100
    static let maxDelayMillis = 2_000

    /// Connection settings the URI may override: a dead peer is noticed within seconds (keepalives, and a TCP
    /// user timeout equal to the call deadline: data unacknowledged that long breaks the connection), not after
    /// the kernel's two hours. Our own poll deadline bounds every call in any case.
    static func defaults(timeoutMillis: Int) -> [(String, String)] {
        [
            ("connect_timeout", String(max(2, (timeoutMillis + 999) / 1000))), ("keepalives", "1"),
            ("keepalives_idle", "5"), ("keepalives_interval", "2"), ("keepalives_count", "2"),
            ("tcp_user_timeout", String(timeoutMillis)),
        ]
    }

    let uri: String
    /// The deadline of every call on this role's connections, connecting included (`--storage-timeout`).
    let timeoutMillis: Int
    /// "writer", "claimer" or "feed": the connection's role, in log lines and in PostgreSQL's `application_name`.
    let role: String
    private let log: @Sendable (LogRecord) -> Void
    private let state = Mutex(State())

    init(uri: String, role: String, timeoutMillis: Int, log: @escaping @Sendable (LogRecord) -> Void) {
        self.uri = uri
        self.timeoutMillis = timeoutMillis
        self.role = role
        self.log = log
    }

    /// Opens a connection for this role; the feed's LISTENs before it reads anything, so that no notification
    /// of a commit after its first read is missed.
    /// - Throws: `PGError` with libpq's or the server's message.
    /// - Parameter until: when the opening must be done by (at most the call timeout from now).
    func open(listening: Bool, until: DispatchTime? = nil) throws(PGError) -> PGConnection {
        // One deadline for the whole opening: connecting, the settings and the LISTEN.
        let full = DispatchTime.now() + .milliseconds(timeoutMillis)
        let deadline = min(until ?? full, full)
        let left = Int((deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1_000_000)
        guard deadline > .now(), left > 0 else {
            throw PGError(message: "no time left to connect", sqlState: nil, connectionLost: true, timedOut: true)
        }
        let connection = try PGConnection(
            uri: uri, defaults: Self.defaults(timeoutMillis: timeoutMillis) + [("application_name", "memo-\(role)")],
            timeoutMillis: left)
        connection.callTimeoutMillis = timeoutMillis
        // Never keep a transaction open by mistake, and keep commits durable: with synchronous_commit off a crash
        // could hand one revision to two different changes. The writer's statement gives up inside PostgreSQL
        // before our own deadline passes (a lock wait at 60 %, any statement at 80 % of it), so that a write
        // queued behind another server's lock is refused with a definite rollback (501), not cut off with an
        // unknown outcome; the feed's reads, a first snapshot among them, may be long.
        // JIT compilation is off: these are small statements, and the feed's read, whose row estimate on a table
        // never analysed passes the JIT threshold, spent about 20 ms compiling for every read of a few rows.
        try connection.execute(
            "SET synchronous_commit = on; SET idle_in_transaction_session_timeout = '10s'; "
                + "SET client_min_messages = warning; SET jit = off"
                + (role == "writer" ? Self.writerTimeouts(timeoutMillis) : ""), deadline: deadline)
        if listening { try connection.execute("LISTEN \(PostgresSQL.channel)", deadline: deadline) }
        return connection
    }

    /// The writer's limits inside PostgreSQL, below the deadline of ours.
    static func writerTimeouts(_ timeoutMillis: Int) -> String {
        "; SET lock_timeout = '\(max(50, timeoutMillis * 6 / 10))ms'; "
            + "SET statement_timeout = '\(max(80, timeoutMillis * 8 / 10))ms'"
    }

    /// Opens a connection when the backoff allows it; nil while PostgreSQL stays unreachable.
    func connect(listening: Bool, until: DispatchTime? = nil) -> PGConnection? {
        let due = state.withLock { DispatchTime.now() >= $0.nextAttempt }
        guard due else { return nil }
        do throws(PGError) {
            let connection = try open(listening: listening, until: until)
            let wasDown = state.withLock { state in
                defer { state = State() }
                return state.down
            }
            if wasDown {
                log(LogRecord(
                    .info, "postgres_restored", [("link", role)], text: "PostgreSQL \(role) connection restored"))
            }
            return connection
        } catch {
            let first = state.withLock { state in
                defer {
                    state.down = true
                    state.lastError = error.message
                    state.nextAttempt = .now() + .milliseconds(state.delayMillis)
                    state.delayMillis = min(state.delayMillis * 2, Self.maxDelayMillis)
                }
                return !state.down
            }
            if first {
                log(LogRecord(
                    .error, "postgres_unavailable", [("link", role), ("reason", error.message)],
                    text: "PostgreSQL \(role) connection unavailable, retrying with backoff: \(error.message)"))
            }
            return nil
        }
    }

    /// Records that the connection broke; the next `connect` tries at once.
    func lost(_ error: PGError) {
        let first = state.withLock { state in
            defer {
                state.down = true
                state.lastError = error.message
                state.nextAttempt = .now()
            }
            return !state.down
        }
        if first {
            log(LogRecord(
                .error, "postgres_lost", [("link", role), ("reason", error.message)],
                text: "PostgreSQL \(role) connection lost: \(error.message)"))
        }
    }

    /// The error that took the connection down, for the writes refused meanwhile.
    var lastError: String { state.withLock { $0.lastError } }

    /// How long until the next attempt is due.
    var retryDelayMillis: Int {
        state.withLock { state in
            let now = DispatchTime.now().uptimeNanoseconds
            let due = state.nextAttempt.uptimeNanoseconds
            return due > now ? Int((due - now) / 1_000_000) + 1 : 0
        }
    }

    /// When the next attempt is due.
    var nextAttempt: DispatchTime { state.withLock { $0.nextAttempt } }
}
