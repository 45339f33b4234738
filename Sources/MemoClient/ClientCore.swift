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

/// The client's connection manager: runs what `ClientConnectionMachine` decides (connect, send, close, timers)
/// and feeds it what happens (the connection's events, deadlines, requests and subscriptions from `MemoConnection`).
/// It keeps only what a value cannot: the connection, the timers, the requests' completions and the
/// subscriptions' handlers.
///
/// Confined to `loop`: every method runs on the loop's thread (`MemoConnection` hops there), so no state here
/// needs a lock. `@unchecked Sendable` only so that closures scheduled on the loop may capture it.
final class ClientCore: @unchecked Sendable {
    typealias Action = ClientConnectionMachine.Action
    typealias Deadline = ClientConnectionMachine.Deadline

    let loop: EventLoop
    let configuration: ClientConfiguration
    let tls: TLSContext
    let state: Subject<ConnectionState>
    /// Attempts made since the connection was last live (0 while live), for a status bar.
    let attempts: Subject<Int>
    private var machine: ClientConnectionMachine
    private var connection: WireConnection?
    private var timers: [Deadline: TimerHandle] = [:]
    private var completions: [UInt32: (Result<Reply, any Error>, Int) -> Void] = [:]
    /// Each subscription's owner: where it starts (asked before each `subscribe`) and who gets its events.
    private var subscribers: [Int: (start: () -> UInt64?, handler: ([SubscriptionEvent]) -> Void)] = [:]
    /// Events that came while actions were being run (a connection that fails inside `send`), handled next.
    private var queued: [(inout ClientConnectionMachine, ContinuousClock.Instant) -> [Action]] = []
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
    }

    /// Feeds one event to the machine and runs what it answers; an event that comes while that runs waits its
    /// turn, so the machine always sees events one at a time and in order.
    private func handle(_ event: @escaping (inout ClientConnectionMachine, ContinuousClock.Instant) -> [Action]) {
        queued.append(event)
        guard !running else { return }
        running = true
        defer { running = false }
        while !queued.isEmpty {
            let next = queued.removeFirst()
            run(next(&machine, .now))
        }
    }

    // MARK: - Public operations (from MemoConnection, on the loop)

    /// Starts connecting. With `onFirstOutcome`, it hears how the first connection went (nil: live), and a server
    /// not reachable yet is tried again until `firstDeadline`.
    func start(firstDeadline: ContinuousClock.Instant? = nil, onFirstOutcome: ((ConnectionEnd?) -> Void)? = nil) {
        self.onFirstOutcome = onFirstOutcome
        handle { machine, now in machine.start(firstDeadline: onFirstOutcome == nil ? nil : firstDeadline, now: now) }
    }

    func close() {
        handle { machine, _ in machine.close() }
    }

    func send(
        _ message: Message, timeout: Duration?, completion: @escaping (Result<Reply, any Error>, Int) -> Void
    ) {
        handle { [unowned self] machine, now in
            let (id, actions) = machine.submit(message, timeout: timeout, now: now)
            completions[id] = completion
            return actions
        }
    }

    /// Subscribes and returns the subscription's token.
    func subscribe(start: @escaping () -> UInt64?, handler: @escaping ([SubscriptionEvent]) -> Void) -> Int {
        let token = nextToken
        nextToken += 1
        handle { [unowned self] machine, _ in
            let actions = machine.subscribe(token: token)
            if machine.subscriptions[token] != nil { subscribers[token] = (start, handler) }
            return actions
        }
        return token
    }

    /// Ends the subscription's current run on the server and starts it again from where its owner now says.
    func restart(_ token: Int) {
        handle { machine, now in machine.restart(token, now: now) }
    }

    func unsubscribe(_ token: Int) {
        handle { [unowned self] machine, now in
            subscribers[token] = nil
            return machine.unsubscribe(token, now: now)
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
                    self.handle { machine, now in machine.deadlinePassed(deadline, now: now) }
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
        do {
            do {
                let hostPort = try HostPort(parsing: server, defaultPort: ClientConfiguration.defaultPort)
                address = try SocketAddress(parsing: hostPort.description)
            } catch let error as HostPort.SyntaxError {
                return attemptFailed(.unresolved(error.description), attempt: attempt)
            } catch let error as NetError {
                return attemptFailed(.unresolved(error.message.lowercasedFirst), attempt: attempt)
            }
            engine = try TLSEngine(context: tls, serverName: ClientConfiguration.host(of: server))
        } catch let error as TLSError {
            return attemptFailed(.tlsRefused(error), attempt: attempt)
        } catch {
            return attemptFailed(.unreachable("\(error)"), attempt: attempt)
        }
        let connection = WireConnection(loop: loop, address: address, engine: engine)
        self.connection = connection
        connection.onConnected = { [unowned self] in handle { machine, _ in machine.connected(attempt: attempt) } }
        connection.onHandshakeDone = { [unowned self] in
            handle { machine, _ in machine.handshakeDone(attempt: attempt) }
        }
        connection.onFrames = { [unowned self] frames in
            handle { machine, now in machine.received(frames, attempt: attempt, now: now) }
        }
        connection.onEnd = { [unowned self, unowned connection] end in
            if self.connection === connection { self.connection = nil }
            handle { machine, now in machine.transportEnded(end, attempt: attempt, now: now) }
        }
        connection.start()
    }

    private func attemptFailed(_ end: ConnectionEnd, attempt: Int) {
        handle { machine, now in machine.attemptFailed(end, attempt: attempt, now: now) }
    }
}
