internal import CPostgres
import Dispatch
import Foundation
import MemoModel
import Synchronization
/// An error from libpq or from PostgreSQL, with the server's SQLSTATE when it sent one.
struct PGError: Error, CustomStringConvertible {
    let message: String
    /// The SQLSTATE code ("40001"), or nil when the error came from libpq itself (a broken connection).
    let sqlState: String?
    /// True when the connection is gone (broken, or dropped because its deadline passed): it must be replaced.
    let connectionLost: Bool
    /// True when the whole statement had been handed to the socket before the failure: with `connectionLost`, its
    /// outcome is unknown. False when PostgreSQL cannot have run it (libpq still held part of it, so the message
    /// that ends it never arrived).
    var sent = false
    /// True when the failure is our deadline passing (PostgreSQL frozen, partitioned, or very slow).
    var timedOut = false

    var description: String { message }
}

/// Hands a thread its first connection without the thread keeping it: Foundation's `Thread` keeps its block, and
/// whatever the block captured, for as long as the thread runs. A connection captured there outlives the thread's
/// own reference: one given up after a deadline was never finished, and its backend stayed connected, idle, until
/// the server stopped.
final class PGConnectionHandoff: Sendable {
    private let slot: Mutex<PGConnection?>

    init(_ connection: PGConnection) { slot = Mutex(connection) }

    /// The connection, once; nil after.
    func take() -> PGConnection? { slot.withLock { $0.take() } }
}

/// One libpq connection, in non-blocking mode: every call waits in `poll` on the socket with a deadline of ours,
/// so that a frozen or partitioned PostgreSQL costs at most the deadline (`statement_timeout` runs inside
/// PostgreSQL, which a stopped backend never fires). A call whose deadline passes leaves the connection unusable
/// (`isHealthy` false): the owner drops it and makes another.
///
/// `@unchecked Sendable` because it moves once: the store opens it, then hands it to its writer or feed thread,
/// which alone calls it from then on (libpq connections must not be used by two threads at a time).
final class PGConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Set when a call's deadline passed: the protocol state is unknown, nothing more may be sent.
    private var abandoned = false
    /// How long a call may take when it is given no deadline of its own.
    var callTimeoutMillis: Int
    /// The writer's lock and statement limits when a batch narrowed them (see `PostgresStore`); nil: the session's.
    var narrowedLimitsMillis: Int?
    /// The statements prepared on this connection (`prepared: true` calls), by their text: parsed and planned once
    /// per connection rather than with every call. It lives and dies with the connection: a reconnected one (a
    /// restart, a terminated backend) is a new `PGConnection` that prepares again.
    private var preparedNames: [String: String] = [:]
    /// How many statements were ever prepared on this connection, so that every name is new: a name given up after
    /// a stale plan (`isStalePlan`) is not reused while the server may still hold it.
    private var preparedCount = 0

    /// Connects with `uri` (any libpq connection string or URI) on top of `defaults`, which the URI overrides,
    /// within `timeoutMillis` (also each later call's default).
    /// - Throws: `PGError` with libpq's message, or a timeout.
    init(uri: String, defaults: [(String, String)], timeoutMillis: Int) throws(PGError) {
        let deadline = DispatchTime.now() + .milliseconds(timeoutMillis)
        let keywords = defaults.map(\.0) + ["dbname"]
        let values = defaults.map(\.1) + [uri]
        let connection = withCStrings(keywords) { keys in
            withCStrings(values) { vals in PQconnectStartParams(keys, vals, 1) }
        }
        guard let connection else {
            throw PGError(message: "cannot connect: out of memory", sqlState: nil, connectionLost: true)
        }
        // Checked before `handle` is set: a throw after that would run deinit and finish the connection twice.
        if let failure = Self.poll(connecting: connection, until: deadline, timeoutMillis: timeoutMillis) {
            PQfinish(connection)
            throw failure
        }
        handle = connection
        callTimeoutMillis = timeoutMillis
        PQsetnonblocking(connection, 1)
        // PostgreSQL's notices (a backend terminated by an administrator) are not written to stderr: the store
        // logs each connection transition itself.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    /// Drives `PQconnectPoll` until the connection is made, fails, or the deadline passes (libpq's own
    /// `connect_timeout` applies only to its blocking connect).
    private static func poll(connecting connection: OpaquePointer, until deadline: DispatchTime, timeoutMillis: Int)
        -> PGError?
    {
        if PQstatus(connection) == CONNECTION_BAD {
            return PGError(message: trimmed(PQerrorMessage(connection)), sqlState: nil, connectionLost: true)
        }
        var status = PGRES_POLLING_WRITING
        while true {
            switch status {
            case PGRES_POLLING_OK:
                return nil
            case PGRES_POLLING_FAILED:
                return PGError(message: trimmed(PQerrorMessage(connection)), sqlState: nil, connectionLost: true)
            default:
                let events = status == PGRES_POLLING_READING ? Int16(POLLIN) : Int16(POLLOUT)
                if !waitFor(PQsocket(connection), events, until: deadline) {
                    return PGError(
                        message: "PostgreSQL did not answer the connection within \(timeoutMillis) ms",
                        sqlState: nil, connectionLost: true, timedOut: true)
                }
                status = PQconnectPoll(connection)
            }
        }
    }

    deinit {
        PQfinish(handle)
    }

    /// False once libpq has seen the connection break, or a call's deadline passed.
    var isHealthy: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// The socket, for waiting on notifications with poll.
    var socket: Int32 { PQsocket(handle) }

    /// How long `checkIdle` waits for the end of the stream after an idle connection received something.
    static let idleEndWaitMillis: Int32 = 250

    /// The backend's process id, which `pg_terminate_backend` takes.
    var backendPID: Int32 { PQbackendPID(handle) }

    /// Checks an idle connection before a statement is sent on it: reads whatever arrived (a backend terminated
    /// by an administrator sends its reason, then closes) without waiting. False when the connection is dead,
    /// so that the caller reconnects first instead of failing a write that never reached PostgreSQL.
    func checkIdle() -> Bool {
        guard isHealthy else { return false }
        // A few rounds: the first read takes the backend's last message, the next finds the end of the stream.
        // Nothing is sent to an idle connection but a terminated backend's last words: once something came, the
        // next round waits a little for the end of the stream, which the backend sends only as its process exits
        // (after it has left pg_stat_activity), rather than send a write into a connection about to close.
        var waitMillis: Int32 = 0
        for _ in 0..<4 {
            var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard Foundation.poll(&fd, 1, waitMillis) > 0 else { break }
            waitMillis = Self.idleEndWaitMillis
            if fd.revents & Int16(POLLERR | POLLNVAL) != 0 { return false }
            if PQconsumeInput(handle) == 0 { return false }
            while let notify = PQnotifies(handle) { PQfreemem(notify) }  // parses what came; nobody listens here
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs SQL (several statements allowed) and returns the last result.
    @discardableResult
    func execute(_ sql: String, deadline: DispatchTime? = nil) throws(PGError) -> PGResult {
        let deadline = deadline ?? defaultDeadline
        try send(sql, deadline: deadline)
        return try results(until: deadline)
    }

    /// Sends SQL (several statements allowed); `execute` collects its results.
    private func send(_ sql: String, deadline: DispatchTime? = nil) throws(PGError) {
        try ensureUsable()
        if PQsendQuery(handle, sql) == 0 {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
        try flush(until: deadline ?? defaultDeadline)
    }

    private var defaultDeadline: DispatchTime { .now() + .milliseconds(callTimeoutMillis) }

    private func ensureUsable() throws(PGError) {
        if abandoned {
            throw PGError(message: "the connection was dropped after a timeout", sqlState: nil, connectionLost: true)
        }
    }

    /// Hands everything libpq queued to the socket before `deadline`, reading meanwhile so that a server that is
    /// itself writing cannot deadlock the two. Throws with `sent` false: PostgreSQL has not got the whole query.
    private func flush(until deadline: DispatchTime) throws(PGError) {
        while true {
            let left = PQflush(handle)
            if left == 0 { return }
            if left < 0 {
                throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
            }
            let revents = Self.waitEvents(socket, Int16(POLLIN | POLLOUT), until: deadline)
            if revents == 0 { throw timeout(sent: false) }
            if revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 {
                throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
            }
        }
    }

    /// Collects every result of the statement sent, waiting in poll (never in libpq) until `deadline`; returns
    /// the last, or throws the first error (`sent` true: the whole statement had reached the socket).
    /// In pipeline mode, the results of the next statement only, up to the null result that ends them.
    private func results(until deadline: DispatchTime) throws(PGError) -> PGResult {
        var failure: PGError?
        var last: PGResult?
        while true {
            guard let result = try nextResult(until: deadline) else { break }
            do throws(PGError) {
                last = try check(result)
            } catch {
                var error = error
                error.sent = true
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        guard let last else {
            var error = PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
            error.sent = true
            throw error
        }
        return last
    }

    /// Waits in poll until libpq has a whole result (or the null that ends a statement's), then takes it.
    private func nextResult(until deadline: DispatchTime) throws(PGError) -> OpaquePointer? {
        try waitUntilNotBusy(until: deadline)
        return PQgetResult(handle)
    }


    /// The deadline passed: the connection is given up (its state is unknown) and the error says so.
    private func timeout(sent: Bool) -> PGError {
        abandoned = true
        return PGError(
            message: "PostgreSQL did not answer within \(callTimeoutMillis) ms", sqlState: nil, connectionLost: true,
            sent: sent, timedOut: true)
    }

    /// Waits until `fd` has one of `events` (or an error or hangup) or the deadline passes; false on the deadline.
    private static func waitFor(_ fd: Int32, _ events: Int16, until deadline: DispatchTime) -> Bool {
        waitEvents(fd, events, until: deadline) != 0
    }

    /// The events that came (hangup and error count as readable), or 0 when the deadline passed first.
    private static func waitEvents(_ fd: Int32, _ events: Int16, until deadline: DispatchTime) -> Int16 {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard deadline.uptimeNanoseconds > now else { return 0 }
            let millis = Int32(min((deadline.uptimeNanoseconds - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = Foundation.poll(&descriptor, 1, millis)
            if ready > 0 {
                let revents = descriptor.revents
                return revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 ? events | Int16(POLLIN) : revents
            }
            if ready < 0 && errno != EINTR { return events }  // let libpq's next call report the error
        }
    }

    /// Runs one statement with parameters in one round trip. A nil parameter is SQL NULL; `Data` parameters are
    /// sent in binary (bytea), strings in text. Results come back in binary.
    /// - Parameter prepared: the statement is prepared on this connection the first time (one round trip more,
    ///   once) and only executed after that: for a statement the connection runs again and again.
    func execute(
        _ sql: String, _ parameters: [PGParameter], prepared: Bool = false, deadline: DispatchTime? = nil
    ) throws(PGError) -> PGResult {
        let deadline = deadline ?? defaultDeadline
        var replanned = false
        while true {
            // Also before the second run: a DEALLOCATE cut off by the deadline gave the connection up.
            try ensureUsable()
            let name = prepared ? try prepare(sql, until: deadline) : nil
            try queue(sql, parameters, name: name)
            try flush(until: deadline)
            do throws(PGError) {
                return try results(until: deadline)
            } catch {
                // Prepared before the function or table it names was replaced with another result type: run once
                // more, prepared again (it was not run: its implicit transaction rolled back).
                guard let name, isStalePlan(error) else { throw error }
                forget(sql, name: name, until: deadline)
                if replanned { throw error }
                replanned = true
            }
        }
    }

    /// True when `error` is PostgreSQL refusing a prepared statement whose result type changed since it was
    /// prepared: "cached plan must not change result type" (SQLSTATE 0A000), which a newer memo-server starting
    /// on the same database causes when it drops and creates `memo_write` with other columns. PostgreSQL re-plans
    /// a prepared statement by itself when only the objects changed, but not its result columns: every later
    /// execution fails the same way until the name is prepared again. Only outside a transaction block, where the
    /// failed statement's implicit transaction rolled back (nothing of it happened), so running it again is safe;
    /// any other 0A000 fails the same way on its second run and is thrown then.
    private func isStalePlan(_ error: PGError) -> Bool {
        error.sqlState == "0A000" && !error.connectionLost && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Gives up the name `sql` was prepared under (DEALLOCATE, one round trip), so that the next call prepares it
    /// again. Its failure is left to the next call to find: a name left allocated costs only its plan's memory and
    /// is never used again (`preparedCount`), and a connection lost meanwhile fails that call's PREPARE, unsent.
    private func forget(_ sql: String, name: String, until deadline: DispatchTime) {
        preparedNames[sql] = nil
        _ = try? execute("DEALLOCATE \(name)", deadline: deadline)
    }

    /// The name `sql` is prepared under on this connection, prepared now (one round trip) if it is not yet.
    /// Throws with `sent` false: whatever happened to the preparation, the statement that needs it was not sent,
    /// and the name is not recorded (a PREPARE that failed, by `statement_timeout` among others, left none).
    private func prepare(_ sql: String, until deadline: DispatchTime) throws(PGError) -> String {
        if let name = preparedNames[sql] { return name }
        let name = "memo_\(preparedCount + 1)"
        do throws(PGError) {
            guard PQsendPrepare(handle, name, sql, 0, nil) == 1 else {
                throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
            }
            try flush(until: deadline)
            _ = try results(until: deadline)
        } catch {
            var unsent = error
            unsent.sent = false
            throw unsent
        }
        preparedCount += 1
        preparedNames[sql] = name
        return name
    }

    /// Runs `sql` with its parameters, then each of `next` with its own in a transaction of its own once the
    /// one before has ended, all sent in one round trip (libpq's pipeline mode, a Sync after each).
    /// - Returns: the first statement's result, and each of the next ones' or why it has none (a lost connection
    ///   after the first's answer is theirs: the first's outcome is known).
    /// - Throws: the first statement's error (`sent` as for `execute`); the next ones run all the same.
    ///
    /// A prepared statement refused for a stale plan (`isStalePlan`) is prepared again: when it is the first, the
    /// whole call runs once more (the next ones too, after it, as before: the first had not run); when it is one of
    /// the next, its failure stands and the next call prepares it again.
    func execute(
        _ sql: String, _ parameters: [PGParameter], then next: [(sql: String, parameters: [PGParameter])],
        prepared: Bool = false, deadline: DispatchTime? = nil
    ) throws(PGError) -> (PGResult, [Result<PGResult, PGError>]) {
        let deadline = deadline ?? defaultDeadline
        var replanned = false
        while true {
            try ensureUsable()
            // Prepared before the pipeline (each once per connection), so that the pipeline holds only the
            // statements.
            var names: [String?] = []
            for statement in [sql] + next.map(\.sql) {
                names.append(prepared ? try prepare(statement, until: deadline) : nil)
            }
            let (first, answers) = try pipeline(sql, parameters, then: next, names: names, until: deadline)
            for (index, answer) in answers.enumerated() {
                if case .failure(let error) = answer, let name = names[index + 1], isStalePlan(error) {
                    forget(next[index].sql, name: name, until: deadline)
                }
            }
            if case .failure(let error) = first, let name = names[0], isStalePlan(error) {
                forget(sql, name: name, until: deadline)
                if !replanned {
                    replanned = true
                    continue
                }
            }
            return (try first.get(), answers)
        }
    }

    /// The pipeline of `execute(_:_:then:)`, each statement under its name in `names` when it has one.
    private func pipeline(
        _ sql: String, _ parameters: [PGParameter], then next: [(sql: String, parameters: [PGParameter])],
        names: [String?], until deadline: DispatchTime
    ) throws(PGError) -> (Result<PGResult, PGError>, [Result<PGResult, PGError>]) {
        guard PQenterPipelineMode(handle) == 1 else {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
        do throws(PGError) {
            try queue(sql, parameters, name: names[0])
            try sync()
            for (index, statement) in next.enumerated() {
                try queue(statement.sql, statement.parameters, name: names[index + 1])
                try sync()
            }
        } catch {
            // Nothing was sent yet: the connection is dropped rather than left in pipeline mode.
            abandoned = true
            throw PGError(message: error.message, sqlState: nil, connectionLost: true)
        }
        try flush(until: deadline)
        var first: PGResult?
        var failure: PGError?
        do throws(PGError) {
            first = try results(until: deadline)
        } catch {
            if error.connectionLost { throw error }
            failure = error
        }
        var answers: [Result<PGResult, PGError>] = []
        do throws(PGError) {
            try takeSync(until: deadline)
            for _ in next {
                do throws(PGError) {
                    answers.append(.success(try results(until: deadline)))
                } catch {
                    if error.connectionLost { throw error }
                    answers.append(.failure(error))
                }
                try takeSync(until: deadline)
            }
            guard PQexitPipelineMode(handle) == 1 else { throw outOfStep() }
        } catch {
            answers += Array(repeating: .failure(error), count: next.count - answers.count)
        }
        if let failure { return (.failure(failure), answers) }
        return (.success(first!), answers)
    }

    private func sync() throws(PGError) {
        guard PQpipelineSync(handle) == 1 else {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
    }

    /// Takes the result that reports a pipeline's Sync.
    private func takeSync(until deadline: DispatchTime) throws(PGError) {
        guard let result = try nextResult(until: deadline) else { throw outOfStep() }
        let status = PQresultStatus(result)
        PQclear(result)
        guard status == PGRES_PIPELINE_SYNC else { throw outOfStep() }
    }

    /// libpq's pipeline answered something other than expected: the connection is given up.
    private func outOfStep() -> PGError {
        abandoned = true
        return PGError(
            message: "the pipeline's answers came out of step: \(Self.trimmed(PQerrorMessage(handle)))", sqlState: nil,
            connectionLost: true, sent: true)
    }

    /// Queues a statement with its parameters (text, or binary for `.binary`), results asked in binary; the
    /// statement prepared as `name` when given.
    private func queue(_ sql: String, _ parameters: [PGParameter], name: String?) throws(PGError) {
        let count = parameters.count
        var lengths = [Int32](repeating: 0, count: count)
        var formats = [Int32](repeating: 0, count: count)
        var buffers: [UnsafeMutableRawPointer?] = []
        buffers.reserveCapacity(count)
        defer { for buffer in buffers { free(buffer) } }
        for (index, parameter) in parameters.enumerated() {
            switch parameter {
            case .null:
                buffers.append(nil)
            case .text(let text):
                buffers.append(UnsafeMutableRawPointer(strdup(text)))
            case .binary(let bytes):
                let buffer = malloc(max(bytes.count, 1))!
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { buffer.copyMemory(from: base, byteCount: raw.count) }
                }
                buffers.append(buffer)
                lengths[index] = Int32(bytes.count)
                formats[index] = 1
            }
        }
        let queued = buffers.withUnsafeBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                if let name {
                    PQsendQueryPrepared(handle, name, Int32(count), values.baseAddress, lengths, formats, 1)
                } else {
                    PQsendQueryParams(handle, sql, Int32(count), nil, values.baseAddress, lengths, formats, 1)
                }
            }
        }
        if queued == 0 {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
    }

    /// Runs `sql`, a `COPY ... TO STDOUT (FORMAT binary)`, and hands `row` each row as libpq receives it: the rows
    /// are never all held at once, as a result of `execute` holds them (with a per-value overhead) until it is
    /// freed. A failure of `row` or a malformed stream drops the connection (it is left in the middle of a copy).
    func copyOut(
        _ sql: String, deadline: DispatchTime? = nil, row: (inout PGCopyRow) throws(PGError) -> Void
    ) throws(PGError) {
        let deadline = deadline ?? defaultDeadline
        try send(sql, deadline: deadline)
        // The first result says whether the copy began; anything else is the statement's error.
        try waitUntilNotBusy(until: deadline)
        guard let started = PQgetResult(handle) else {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
        if PQresultStatus(started) != PGRES_COPY_OUT {
            do throws(PGError) {
                _ = try check(started)
            } catch {
                _ = try? results(until: deadline)
                throw error
            }
            _ = try? results(until: deadline)
            throw PGError(message: "the statement is not a COPY TO STDOUT", sqlState: nil, connectionLost: false)
        }
        PQclear(started)
        var headerSeen = false
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 1)
            if length > 0, let buffer {
                defer { PQfreemem(buffer) }
                var message = UnsafeRawBufferPointer(start: buffer, count: Int(length))
                do throws(PGError) {
                    if !headerSeen {
                        message = try PGCopyRow.skipHeader(message)
                        headerSeen = true
                    }
                    // One row per message (libpq's promise for COPY TO), or the trailer.
                    var copied = try PGCopyRow(message)
                    if copied.isTrailer { continue }
                    try row(&copied)
                } catch {
                    abandoned = true
                    throw error
                }
            } else if length == 0 {
                if !Self.waitFor(socket, Int16(POLLIN), until: deadline) { throw timeout(sent: true) }
                if PQconsumeInput(handle) == 0 {
                    var error = PGError(
                        message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
                    error.sent = true
                    throw error
                }
            } else if length == -1 {
                _ = try results(until: deadline)
                return
            } else {
                var error = PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
                error.sent = true
                abandoned = true
                throw error
            }
        }
    }

    /// Reads from the socket until libpq holds a whole result, or the deadline passes.
    private func waitUntilNotBusy(until deadline: DispatchTime) throws(PGError) {
        while PQisBusy(handle) != 0 {
            if !Self.waitFor(socket, Int16(POLLIN), until: deadline) { throw timeout(sent: true) }
            if PQconsumeInput(handle) == 0 {
                var error = PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
                error.sent = true
                throw error
            }
        }
    }

    /// Reads what arrived on the socket and returns the payloads of the notifications it held, as bytes.
    func notifications() throws(PGError) -> [[UInt8]] {
        if PQconsumeInput(handle) == 0 {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
        }
        var payloads: [[UInt8]] = []
        while let notify = PQnotifies(handle) {
            let extra = UnsafeRawPointer(notify.pointee.extra).assumingMemoryBound(to: UInt8.self)
            payloads.append(Array(UnsafeBufferPointer(start: extra, count: strlen(notify.pointee.extra))))
            PQfreemem(notify)
        }
        return payloads
    }

    private func check(_ result: OpaquePointer?) throws(PGError) -> PGResult {
        guard let result else {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return PGResult(result) }
        let message = Self.trimmed(PQresultErrorMessage(result))
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        PQclear(result)
        throw PGError(
            message: message.isEmpty ? Self.trimmed(PQerrorMessage(handle)) : message, sqlState: state,
            connectionLost: !isHealthy)
    }

    private static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        // libpq's messages run over several lines (DETAIL, HINT, CONTEXT, one line per address tried): one line
        // here, so that a log line or an error frame carrying it stays one line.
        return singleLine(String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A statement parameter.
enum PGParameter {
    case null
    case text(String)
    case binary([UInt8])
}

/// A result held until it is freed; columns are read in binary format.
final class PGResult {
    private let handle: OpaquePointer

    fileprivate init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    var rowCount: Int { Int(PQntuples(handle)) }

    func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, Int32(row), Int32(column)), count: length)
    }

    /// A big-endian integer column (int2, int4 or int8).
    func integer(_ row: Int, _ column: Int) -> Int64 {
        var value: Int64 = 0
        for byte in bytes(row, column) { value = value << 8 | Int64(byte) }
        let width = bytes(row, column).count * 8
        if width < 64 { value = (value << (64 - width)) >> (64 - width) }  // sign-extends a narrower column
        return value
    }

    /// A uuid column (16 bytes in binary); a shorter value (NULL) reads as the nil UUID. The bytes are copied into
    /// zeros: `UUID()` as the starting value made a random one first, which Foundation on Linux does by opening,
    /// reading and closing /dev/urandom, once for every row of every write's result.
    func uuid(_ row: Int, _ column: Int) -> UUID {
        let raw = bytes(row, column)
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw.prefix(16))) }
        return UUID(uuid: value)
    }

    func text(_ row: Int, _ column: Int) -> String {
        String(decoding: bytes(row, column), as: UTF8.self)
    }
}

/// Calls `body` with a NULL-terminated array of C strings that lives for the call.
private func withCStrings<Result>(
    _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result
) -> Result {
    let copies = strings.map { strdup($0) } + [nil]
    defer { for copy in copies { free(copy) } }
    return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// One row of a binary `COPY ... TO STDOUT`: a 16-bit field count, then each field as a 32-bit length (-1: NULL)
/// and its bytes, all big-endian. Fields are read in order.
struct PGCopyRow {
    private let bytes: UnsafeRawBufferPointer
    private var at = 2
    /// The fields the row holds.
    let fieldCount: Int

    /// The 11-byte signature, the flags and the header extension that precede the first row.
    static let signature: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00]

    init(_ bytes: UnsafeRawBufferPointer) throws(PGError) {
        guard bytes.count >= 2 else { throw Self.malformed("a row shorter than its field count") }
        self.bytes = bytes
        fieldCount = Int(Int16(bitPattern: UInt16(bytes[0]) << 8 | UInt16(bytes[1])))
    }

    /// The stream's end: a field count of -1.
    var isTrailer: Bool { fieldCount == -1 }

    /// `message` after the copy's header.
    static func skipHeader(_ message: UnsafeRawBufferPointer) throws(PGError) -> UnsafeRawBufferPointer {
        let fixed = signature.count + 8
        guard message.count >= fixed, message.prefix(signature.count).elementsEqual(signature) else {
            throw malformed("no binary COPY signature")
        }
        let extensionLength = Int(bigEndian(message, at: signature.count + 4, width: 4))
        guard extensionLength >= 0, message.count >= fixed + extensionLength else {
            throw malformed("a header extension longer than the message")
        }
        return UnsafeRawBufferPointer(rebasing: message[(fixed + extensionLength)...])
    }

    /// The next field's bytes; nil for NULL.
    mutating func field() throws(PGError) -> UnsafeRawBufferPointer? {
        guard at + 4 <= bytes.count else { throw Self.malformed("a row with fewer fields than it says") }
        let length = Int(Int32(truncatingIfNeeded: Self.bigEndian(bytes, at: at, width: 4)))
        at += 4
        if length < 0 { return nil }
        guard at + length <= bytes.count else { throw Self.malformed("a field longer than its row") }
        defer { at += length }
        return UnsafeRawBufferPointer(rebasing: bytes[at..<(at + length)])
    }

    /// The next field, which must not be NULL.
    mutating func value() throws(PGError) -> UnsafeRawBufferPointer {
        guard let field = try field() else { throw Self.malformed("NULL in a NOT NULL column") }
        return field
    }

    /// A big-endian integer field (int2, int4 or int8), sign-extended.
    mutating func integer() throws(PGError) -> Int64 {
        let field = try value()
        guard [2, 4, 8].contains(field.count) else { throw Self.malformed("an integer of \(field.count) bytes") }
        let width = field.count * 8
        let value = Int64(bitPattern: Self.bigEndian(field, at: 0, width: field.count))
        return width < 64 ? (value << (64 - width)) >> (64 - width) : value
    }

    mutating func uuid() throws(PGError) -> UUID {
        let field = try value()
        guard field.count == 16 else { throw Self.malformed("a uuid of \(field.count) bytes") }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: field) }
        return UUID(uuid: value)
    }

    /// A bytea or text field as a string (UTF-8 decoded, as `PGResult.text` does).
    mutating func text() throws(PGError) -> String {
        String(decoding: try value(), as: UTF8.self)
    }

    /// Two text fields, an author's name and serial, as the author `authors` shares among the rows that name it.
    mutating func author(sharing authors: inout AuthorInterner) throws(PGError) -> Author {
        let name = try value()
        return authors.decoding(name: name, serial: try value())
    }

    private static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + width) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    private static func malformed(_ what: String) -> PGError {
        PGError(message: "PostgreSQL's binary COPY: \(what)", sqlState: nil, connectionLost: true)
    }
}
