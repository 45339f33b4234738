import MemoModel
import MemoNet
import MemoTLS
import MemoWire

/// The answer to a request.
enum Reply: Sendable {
    case message(Message)
    /// The chunks of a `list`, joined.
    case list(revision: UInt64, memos: [Memo])
    /// The chunks of a `list-page`, joined.
    case page(ListPage)
}

/// What a subscription receives, in order.
public enum SubscriptionEvent: Sendable, Hashable {
    /// One chunk of a snapshot at `revision`; the last one has `last` set.
    case snapshot(revision: UInt64, last: Bool, memos: [Memo])
    /// A resumed subscription is live; changes after the requested revision follow.
    case subscribed(head: UInt64)
    case change(Change)
    /// The server no longer holds the changes asked for; the subscription ended and is restarted.
    case historyGone(requested: UInt64, oldestAvailable: UInt64)
    /// The server refused the subscription.
    case failed(code: ErrorCode, message: String)
}

/// The client's connection manager: composes the two machines, `ClientConnectionMachine` (connect, backoff,
/// failover, keepalive) and `RequestTable` (requests, answers, subscriptions), carrying what each says to the other
/// (`route`), runs what they decide (connect, send, close, timers) and feeds them what happens (the connection's
/// events, deadlines, requests and subscriptions from `MemoConnection`). It keeps only what a value cannot: the
/// connection, the timers, the requests' completions and the subscriptions' handlers.
///
/// Confined to `loop`: every method runs on the loop's thread (`MemoConnection` hops there), so no state here
/// needs a lock. `@unchecked Sendable` only so that closures scheduled on the loop may capture it.
final class ConnectionOwner: @unchecked Sendable {
    typealias Deadline = ClientConnectionMachine.Deadline
    /// One event for the two machines: it returns what is left to do once they have told each other theirs.
    typealias Event = (inout ClientConnectionMachine, inout RequestTable, ContinuousClock.Instant) -> [Action]

    let loop: EventLoop
    let configuration: ClientConfiguration
    let tls: TLSContext
    let state: Subject<ConnectionState>
    /// Attempts made since the connection was last live (0 while live), for a status bar.
    let attempts: Subject<Int>
    private var machine: ClientConnectionMachine
    private var table: RequestTable
    private var connection: WireConnection?
    private var timers: [Deadline: TimerHandle] = [:]
    private var completions: [UInt32: (Result<Reply, any Error>, Int) -> Void] = [:]
    /// Each subscription's owner: where it starts (asked before each `subscribe`) and who gets its events.
    private var subscribers: [Int: (start: () -> UInt64?, handler: ([SubscriptionEvent]) -> Void)] = [:]
    /// Events that came while actions were being run (a connection that fails inside `send`), handled next.
    private var queued: [Event] = []
    private var running = false
    /// Told of the first connection's outcome (`MemoConnection.connect` waits on it).
    private var onFirstOutcome: ((ConnectionEnd?) -> Void)?
    /// Told of every failed attempt and lost connection (nil once live again), for a status line.
    var onFailure: ((ConnectionEnd?) -> Void)?
    /// Told of every welcome (the revision is the server's at that moment).
    var onWelcome: ((Welcome) -> Void)?
    /// The store's revision when the server last welcomed us; nil before the first welcome.
    var lastWelcomeRevision: UInt64?
    /// The next subscription's token.
    private var nextToken = 1

    init(
        loop: EventLoop, configuration: ClientConfiguration, tls: TLSContext, state: Subject<ConnectionState>,
        attempts: Subject<Int>
    ) {
        self.loop = loop
        self.configuration = configuration
        self.tls = tls
        self.state = state
        self.attempts = attempts
        machine = ClientConnectionMachine(configuration: configuration)
        table = RequestTable(configuration: configuration)
    }

    /// Feeds one event to the machines and runs what they answer; an event that comes while that runs waits its
    /// turn, so the machines always see events one at a time and in order.
    private func handle(_ event: @escaping Event) {
        queued.append(event)
        guard !running else { return }
        running = true
        defer { running = false }
        while !queued.isEmpty {
            let next = queued.removeFirst()
            run(next(&machine, &table, .now))
        }
    }

    // MARK: - Public operations (from MemoConnection, on the loop)

    /// Starts connecting. With `onFirstOutcome`, it hears how the first connection went (nil: live), and a server
    /// not reachable yet is tried again until `firstDeadline`.
    func start(firstDeadline: ContinuousClock.Instant? = nil, onFirstOutcome: ((ConnectionEnd?) -> Void)? = nil) {
        self.onFirstOutcome = onFirstOutcome
        handle { machine, table, now in
            Self.route(
                machine.start(firstDeadline: onFirstOutcome == nil ? nil : firstDeadline, now: now),
                machine: &machine, table: &table, now: now)
        }
    }

    func close() {
        handle { machine, table, now in Self.route(machine.close(), machine: &machine, table: &table, now: now) }
    }

    func send(
        _ message: Message, timeout: Duration?, behindHello: Bool = false,
        completion: @escaping (Result<Reply, any Error>, Int) -> Void
    ) {
        handle { [unowned self] machine, table, now in
            let (id, actions) = Self.submit(
                message, timeout: timeout, behindHello: behindHello, machine: &machine, table: &table, now: now)
            completions[id] = completion
            return actions
        }
    }

    /// Subscribes and returns the subscription's token.
    func subscribe(start: @escaping () -> UInt64?, handler: @escaping ([SubscriptionEvent]) -> Void) -> Int {
        let token = nextToken
        nextToken += 1
        handle { [unowned self] machine, table, now in
            let actions = table.subscribe(token: token, link: machine.link)
            if table.isSubscribed(token) { subscribers[token] = (start, handler) }
            return Self.route(table: actions, machine: &machine, table: &table, now: now)
        }
        return token
    }

    /// Ends the subscription's current run on the server and starts it again from where its owner now says.
    func restart(_ token: Int) {
        handle { machine, table, now in
            Self.route(table: table.restart(token, link: machine.link), machine: &machine, table: &table, now: now)
        }
    }

    func unsubscribe(_ token: Int) {
        handle { [unowned self] machine, table, now in
            subscribers[token] = nil
            return Self.route(
                table: table.unsubscribe(token, link: machine.link), machine: &machine, table: &table, now: now)
        }
    }

    // MARK: - Running actions

    private func run(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .connect(let server, let attempt): connect(to: server, attempt: attempt)
            case .send(let frame): connection?.send(frame)
            case .subscribe(let token, let id):
                guard let start = subscribers[token]?.start else { continue }
                connection?.send(Message.subscribe(after: start()).frame(requestID: id))
            case .closeConnection(let polite):
                connection?.close(polite: polite)
                connection = nil
            case .schedule(let deadline, let delay):
                timers.removeValue(forKey: deadline)?.cancel()
                timers[deadline] = loop.schedule(after: delay) { [weak self] in
                    guard let self else { return }
                    self.timers[deadline] = nil
                    self.handle { machine, table, now in
                        Self.deadlinePassed(deadline, machine: &machine, table: &table, now: now)
                    }
                }
            case .cancel(let deadline):
                timers.removeValue(forKey: deadline)?.cancel()
            case .complete(let id, let result, let attempts):
                completions.removeValue(forKey: id)?(result, attempts)
            case .deliver(let token, let events):
                subscribers[token]?.handler(events)
            case .reportState(let new):
                if state.value != new { state.send(new) }
            case .reportAttempts(let count):
                attempts.send(count)
            case .reportFailure(let end):
                onFailure?(end)
            case .welcomed(let welcome):
                onWelcome?(welcome)
            case .firstOutcome(let end):
                let first = onFirstOutcome
                onFirstOutcome = nil
                first?(end)
            }
        }
        if machine.closed { subscribers.removeAll() }
    }

    /// Opens a connection to `server` and wires its events (as attempt `attempt`'s) to the machine.
    private func connect(to server: String, attempt: Int) {
        let address: SocketAddress
        let engine: TLSEngine
        let sessionPath: String?
        do {
            do {
                let hostPort = try HostPort(parsing: server, defaultPort: ClientConfiguration.defaultPort)
                address = try SocketAddress(parsing: hostPort.description)
            } catch let error as HostPort.SyntaxError {
                return attemptFailed(.unresolved(error.description), attempt: attempt)
            } catch let error as NetError {
                return attemptFailed(.unresolved(error.message.lowercasedFirst), attempt: attempt)
            }
            sessionPath = configuration.tlsSessionCache.flatMap {
                TLSSessionCache(directory: $0).path(server: server, context: tls)
            }
            engine = try TLSEngine(
                context: tls, serverName: ClientConfiguration.host(of: server),
                session: sessionPath.flatMap(TLSSessionCache.load))
        } catch let error as TLSError {
            return attemptFailed(.tlsRefused(error), attempt: attempt)
        } catch {
            return attemptFailed(.unreachable("\(error)"), attempt: attempt)
        }
        let connection = WireConnection(loop: loop, address: address, engine: engine)
        self.connection = connection
        if let sessionPath {
            connection.onSession = { session in TLSSessionCache.save(session, to: sessionPath) }
        }
        connection.onConnected = { [unowned self] in
            handle { machine, table, now in
                Self.route(machine.connected(attempt: attempt), machine: &machine, table: &table, now: now)
            }
        }
        connection.onHandshakeDone = { [unowned self] in
            handle { machine, table, now in
                Self.route(machine.handshakeDone(attempt: attempt), machine: &machine, table: &table, now: now)
            }
        }
        connection.onFrames = { [unowned self] frames in
            handle { machine, table, now in
                Self.route(
                    machine.received(frames, attempt: attempt, now: now), machine: &machine, table: &table, now: now)
            }
        }
        connection.onEnd = { [unowned self, unowned connection] end in
            if self.connection === connection { self.connection = nil }
            handle { machine, table, now in
                Self.route(
                    machine.transportEnded(end, attempt: attempt, now: now), machine: &machine, table: &table,
                    now: now)
            }
        }
        connection.start()
    }

    private func attemptFailed(_ end: ConnectionEnd, attempt: Int) {
        handle { machine, table, now in
            Self.route(
                machine.attemptFailed(end, attempt: attempt, now: now), machine: &machine, table: &table, now: now)
        }
    }
}

// MARK: - The two machines composed

extension ConnectionOwner {
    /// What `ConnectionOwner` does: either machine's actions, once those meant for the other machine have been given
    /// to it.
    enum Action {
        /// Open a connection to this address (`host:port`) as attempt `attempt`.
        case connect(server: String, attempt: Int)
        /// Write one frame's bytes on the current connection.
        case send([UInt8])
        /// Send `subscribe` with this id for subscription `token`, from where its owner says now.
        case subscribe(token: Int, requestID: UInt32)
        /// Close the current connection without reporting its end: with close_notify when `polite`.
        case closeConnection(polite: Bool)
        case schedule(Deadline, after: Duration)
        case cancel(Deadline)
        /// The request's answer (or failure), and how many times it was sent.
        case complete(UInt32, Result<Reply, any Error>, attempts: Int)
        /// The events of one read for one subscription, in order.
        case deliver(token: Int, [SubscriptionEvent])
        case reportState(ConnectionState)
        /// Attempts since the connection was last live (0 while live).
        case reportAttempts(Int)
        /// Why the last attempt failed or the connection was lost; nil once live again.
        case reportFailure(ConnectionEnd?)
        case welcomed(Welcome)
        /// The outcome of the first connection, for a caller waiting on it (nil: live).
        case firstOutcome(ConnectionEnd?)
    }

    /// The connection machine's actions, in order, with each `.requests` given to the table (with the connection
    /// as it is at that point) and what the table answers put in its place.
    static func route(
        _ actions: [ClientConnectionMachine.Action], machine: inout ClientConnectionMachine,
        table: inout RequestTable, now: ContinuousClock.Instant
    ) -> [Action] {
        var out: [Action] = []
        route(actions, machine: &machine, table: &table, now: now, into: &out)
        return out
    }

    /// The table's actions, in order, with each `closeConnection` given to the connection machine.
    static func route(
        table actions: [RequestTable.Action], machine: inout ClientConnectionMachine, table: inout RequestTable,
        now: ContinuousClock.Instant
    ) -> [Action] {
        var out: [Action] = []
        route(table: actions, machine: &machine, table: &table, now: now, into: &out)
        return out
    }

    /// A request from `MemoConnection`: into the table, and a first connection not made yet is tried now.
    static func submit(
        _ message: Message, timeout: Duration?, behindHello: Bool = false, machine: inout ClientConnectionMachine,
        table: inout RequestTable, now: ContinuousClock.Instant
    ) -> (id: UInt32, actions: [Action]) {
        let (id, actions) = table.submit(message, timeout: timeout, link: machine.link, behindHello: behindHello)
        var out = route(table: actions, machine: &machine, table: &table, now: now)
        route(machine.requestWaiting(now: now), machine: &machine, table: &table, now: now, into: &out)
        return (id, out)
    }

    /// A timer fired: a request's goes to the table, the others to the connection machine.
    static func deadlinePassed(
        _ deadline: Deadline, machine: inout ClientConnectionMachine, table: inout RequestTable,
        now: ContinuousClock.Instant
    ) -> [Action] {
        if case .request(let id) = deadline {
            return route(table: table.expire(id, link: machine.link), machine: &machine, table: &table, now: now)
        }
        return route(machine.deadlinePassed(deadline, now: now), machine: &machine, table: &table, now: now)
    }

    private static func route(
        _ actions: [ClientConnectionMachine.Action], machine: inout ClientConnectionMachine,
        table: inout RequestTable, now: ContinuousClock.Instant, into out: inout [Action]
    ) {
        for action in actions {
            switch action {
            case .connect(let server, let attempt): out.append(.connect(server: server, attempt: attempt))
            case .send(let frame): out.append(.send(frame))
            case .closeConnection(let polite): out.append(.closeConnection(polite: polite))
            case .schedule(let deadline, let delay): out.append(.schedule(deadline, after: delay))
            case .cancel(let deadline): out.append(.cancel(deadline))
            case .requests(let event, let link):
                let answered = table.handle(event, link: link)
                route(table: answered, machine: &machine, table: &table, now: now, into: &out)
            case .reportState(let state): out.append(.reportState(state))
            case .reportAttempts(let count): out.append(.reportAttempts(count))
            case .reportFailure(let end): out.append(.reportFailure(end))
            case .welcomed(let welcome): out.append(.welcomed(welcome))
            case .firstOutcome(let end): out.append(.firstOutcome(end))
            }
        }
    }

    private static func route(
        table actions: [RequestTable.Action], machine: inout ClientConnectionMachine, table: inout RequestTable,
        now: ContinuousClock.Instant, into out: inout [Action]
    ) {
        for action in actions {
            switch action {
            case .send(let frame): out.append(.send(frame))
            case .subscribe(let token, let id): out.append(.subscribe(token: token, requestID: id))
            case .schedule(let id, let delay): out.append(.schedule(.request(id), after: delay))
            case .cancel(let id): out.append(.cancel(.request(id)))
            case .complete(let id, let result, let attempts): out.append(.complete(id, result, attempts: attempts))
            case .deliver(let token, let events): out.append(.deliver(token: token, events))
            case .closeConnection(let reason, let polite):
                let closing = machine.close(as: reason, polite: polite, now: now)
                route(closing, machine: &machine, table: &table, now: now, into: &out)
            }
        }
    }
}
