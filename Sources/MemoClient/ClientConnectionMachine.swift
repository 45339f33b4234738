import MemoModel
import MemoTLS
import MemoWire

/// The client connection's lifecycle as a value: one connection at a time (connecting, handshaking, awaiting
/// the welcome, ready, going away), the attempts and their backoff, failover across addresses, and the keepalive
/// that finds a server that stopped answering. The requests and subscriptions are `RequestTable`'s: this machine
/// tells it of the connection's changes (`.requests` actions), and it asks this machine to close a connection
/// whose server broke the conversation (`close(as:polite:now:)`); `ConnectionOwner` composes the two.
///
/// Its methods take an event with the time it happened and return what to do; `ConnectionOwner` and
/// `WireConnection` only do it. Nothing here touches a socket, a clock or a timer, so every transition is
/// tested event by event (`ClientConnectionMachineTests`).
struct ClientConnectionMachine {
    /// Where the current connection stands.
    enum Phase: Equatable {
        /// No connection: before the first attempt, between attempts, or closed.
        case idle
        case connecting, handshaking, awaitingWelcome, ready
    }

    /// A timer the machine asks for; it comes back as `deadlinePassed`.
    enum Deadline: Hashable {
        /// Attempt `attempt` (TCP, TLS and hello) took longer than the connect timeout.
        case connect(attempt: Int)
        /// The server said going-away on attempt `attempt` and has not closed.
        case goingAway(attempt: Int)
        /// Time for the next attempt.
        case reconnect
        /// The request's answer is overdue.
        case request(UInt32)
        /// Attempt `attempt`'s keepalive check: time to ping a connection that has been silent for the keepalive
        /// interval, or to see whether the ping was answered.
        case keepalive(attempt: Int)
    }

    /// What the request table is told, in order with the other actions.
    enum TableEvent {
        /// Hello is sent and the welcome not yet here: send the requests that may go right behind hello.
        case helloSent
        /// The server refused the conversation before welcoming us (an `error` or `going-away` in place of
        /// `welcome`, TLS refused, close_notify): it processed nothing sent behind hello, so those requests count as
        /// never sent.
        case refusedBeforeWelcome
        /// The connection is welcomed and ready: start the subscriptions, send the waiting requests.
        case ready
        /// The connection is over: nothing is on the wire any more (requests are resent on the next one).
        case lost
        /// Fail every waiting request with this error (a sent write as outcome-unknown).
        case failAll(any Error)
        /// The client closes for good: fail every request (`ClientError.closed`), forget the subscriptions.
        case close
        /// Send a keepalive ping, with an id no request in flight has.
        case ping
        /// The frames of one read after the welcome (going-away taken out): answers and subscription events.
        case answer([Frame])
    }

    /// The connection as the request table is told of it: ready or not, its attempt, its welcome.
    struct Link {
        /// Welcomed, and the server has not said going-away: requests may be sent.
        var isReady: Bool
        /// A connection is under way or open (not between attempts, not closed).
        var isConnected: Bool
        /// The current attempt's number, which requests sent on it carry.
        var attempt: Int
        var welcome: Welcome?
        /// Why the last attempt failed, for requests that time out while not connected.
        var lastFailure: ConnectionEnd?
        var closed: Bool
        /// Hello is sent on this attempt and its welcome not yet here: only a request made to go behind hello may
        /// be sent (`RequestTable.submit(behindHello:)`).
        var awaitingWelcome = false
    }

    enum Action {
        /// Open a connection to this address (`host:port`); its events come back to the machine with `attempt`,
        /// so that a late event of an earlier connection is told apart. The I/O side reports an address or TLS
        /// set-up it cannot use as `attemptFailed`.
        case connect(server: String, attempt: Int)
        /// Write one frame's bytes on the current connection.
        case send([UInt8])
        /// Close the current connection without reporting its end (the machine has already taken it): with
        /// close_notify when `polite` and the handshake is done.
        case closeConnection(polite: Bool)
        case schedule(Deadline, after: Duration)
        case cancel(Deadline)
        /// Tell the request table (`RequestTable.handle`), with the connection as it was when this was decided
        /// (a welcome and a going-away in one read: the requests go out between the two, as they would have).
        case requests(TableEvent, Link)
        case reportState(ConnectionState)
        /// Attempts since the connection was last live (0 while live).
        case reportAttempts(Int)
        /// Why the last attempt failed or the connection was lost; nil once live again.
        case reportFailure(ConnectionEnd?)
        case welcomed(Welcome)
        /// The outcome of the first connection, for a caller waiting on it (nil: live).
        case firstOutcome(ConnectionEnd?)
    }

    /// The request id of `hello`; no other request is sent before `welcome` answers it.
    static let helloRequestID: UInt32 = 1
    /// How long a server that said going-away may take to close.
    static let goingAwayGrace: Duration = .seconds(10)

    let configuration: ClientConfiguration
    private let servers: [String]
    /// The jitter factor of each backoff delay, in [0.5, 1] (fixed in tests).
    private let random: () -> Double

    private(set) var phase = Phase.idle
    /// The server sent `going-away` with this code: nothing new may be sent, but answers still come until it
    /// closes.
    private(set) var goingAwayCode: ErrorCode?
    var goingAway: Bool { goingAwayCode != nil }
    private(set) var closed = false
    /// Counts attempts ever made; the current connection's number, which its deadlines and requests carry.
    private(set) var attempt = 0
    private var attemptsSinceLive = 0
    /// Failed attempts in a row, for the backoff.
    private(set) var failures = 0
    /// Which of `servers` the next attempt uses.
    private(set) var serverIndex = 0
    private var everLive = false
    /// When the current connection was welcomed: only one that stays up `healthyAfter` resets the backoff, so
    /// that a server (or a path) that welcomes and then fails at once is retried with growing delays.
    private var liveSince: ContinuousClock.Instant?
    private var reconnectPending = false
    /// Why the last attempt failed, for requests that time out while not connected.
    private(set) var lastFailure: ConnectionEnd?
    /// A caller waits for the first connection's outcome (`MemoConnection.connect`).
    private var awaitingFirstOutcome = false
    /// Until when a first connection that cannot reach the server is tried again (with backoff) before the
    /// caller hears of the failure: a server that is still starting is worth waiting for.
    private var firstDeadline: ContinuousClock.Instant?
    private(set) var welcome: Welcome?
    /// When the current connection last delivered a frame (or was welcomed): any frame is a sign of life, so a
    /// busy connection is never pinged.
    private(set) var lastHeard: ContinuousClock.Instant?
    /// When the keepalive ping still unanswered went out; nil when none is.
    private(set) var pingSentAt: ContinuousClock.Instant?
    private var reportedState = ConnectionState.connecting

    init(configuration: ClientConfiguration, random: @escaping () -> Double = { Double.random(in: 0.5...1) }) {
        self.configuration = configuration
        self.servers = configuration.servers
        self.random = random
    }

    /// Ready for requests: welcomed, and the server has not said going-away.
    var isReady: Bool { phase == .ready && !goingAway }

    /// The connection as the request table sees it now.
    var link: Link {
        Link(isReady: isReady, isConnected: phase != .idle, attempt: attempt, welcome: welcome,
             lastFailure: lastFailure, closed: closed, awaitingWelcome: phase == .awaitingWelcome)
    }

    // MARK: - Connecting

    /// Makes the first attempt. With `firstDeadline`, a caller waits for the outcome (`firstOutcome`), and a
    /// server not reachable yet is tried again until then.
    mutating func start(firstDeadline: ContinuousClock.Instant?, now: ContinuousClock.Instant) -> [Action] {
        if let firstDeadline {
            awaitingFirstOutcome = true
            self.firstDeadline = firstDeadline
        }
        var actions: [Action] = []
        makeAttempt(now: now, into: &actions)
        return actions
    }

    /// The address the next attempt connects to: one of the configured servers, in turn.
    private var currentServer: String { servers[serverIndex % servers.count] }

    private mutating func makeAttempt(now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard !closed, phase == .idle else { return }
        if reconnectPending {
            reconnectPending = false
            actions.append(.cancel(.reconnect))
        }
        attempt += 1
        attemptsSinceLive += 1
        actions.append(.reportAttempts(attemptsSinceLive))
        report(everLive ? .reconnecting : .connecting, into: &actions)
        phase = .connecting
        goingAwayCode = nil
        var timeout = configuration.connectTimeout
        if awaitingFirstOutcome, let firstDeadline {
            timeout = max(.milliseconds(1), min(timeout, firstDeadline - now))
        }
        actions.append(.schedule(.connect(attempt: attempt), after: timeout))
        actions.append(.connect(server: currentServer, attempt: attempt))
    }

    /// The I/O side could not start the attempt (the address does not parse, TLS could not be set up).
    mutating func attemptFailed(_ end: ConnectionEnd, attempt: Int, now: ContinuousClock.Instant) -> [Action] {
        guard attempt == self.attempt, phase == .connecting else { return [] }
        var actions: [Action] = []
        ended(end, now: now, into: &actions)
        return actions
    }

    /// TCP is connected; the TLS handshake starts.
    mutating func connected(attempt: Int) -> [Action] {
        if attempt == self.attempt, phase == .connecting { phase = .handshaking }
        return []
    }

    /// The TLS handshake is done: say hello.
    mutating func handshakeDone(attempt: Int) -> [Action] {
        guard attempt == self.attempt, phase == .handshaking || phase == .connecting else { return [] }
        phase = .awaitingWelcome
        let hello = Message.hello(
            minVersion: WireProtocol.minimumVersion, maxVersion: WireProtocol.version,
            client: configuration.clientName)
        var actions: [Action] = [.send(hello.frame(requestID: Self.helloRequestID))]
        tell(.helloSent, into: &actions)
        return actions
    }

    /// The transport ended by itself.
    mutating func transportEnded(_ end: TransportEnd, attempt: Int, now: ContinuousClock.Instant) -> [Action] {
        guard attempt == self.attempt, phase != .idle else { return [] }
        var actions: [Action] = []
        ended(ConnectionEnd(end, afterWelcome: phase == .ready), now: now, into: &actions)
        return actions
    }

    mutating func deadlinePassed(_ deadline: Deadline, now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        switch deadline {
        case .connect(let number):
            guard number == attempt, phase != .idle, phase != .ready else { return [] }
            actions.append(.closeConnection(polite: false))
            ended(.timedOut, now: now, into: &actions)
        case .goingAway(let number):
            guard number == attempt, phase != .idle, let code = goingAwayCode else { return [] }
            // The server closes once its writes in flight are answered; it did not.
            let reason = ConnectionEnd.lost("the server went away (\(code.name)) and did not close")
            closeConnection(as: reason, now: now, into: &actions)
        case .reconnect:
            guard reconnectPending else { return [] }
            reconnectPending = false
            makeAttempt(now: now, into: &actions)
        case .request:
            // The request table's deadline (`RequestTable.expire`); `ConnectionOwner` gives it there.
            return []
        case .keepalive(let number):
            guard number == attempt, phase == .ready else { return [] }
            checkLiveness(now: now, into: &actions)
        }
        return actions
    }

    /// The keepalive deadline: ping a connection silent for the interval; end one whose ping went unanswered for
    /// the keepalive timeout. A server that stopped (SIGSTOP, a hung process) keeps its TCP connection up, so
    /// only an answer tells that it is there.
    private mutating func checkLiveness(now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard let interval = configuration.keepalive, let heard = lastHeard else { return }
        let timeout = configuration.keepaliveTimeout
        if let sent = pingSentAt {
            if heard >= sent {
                pingSentAt = nil  // answered (the pong, or any frame after the ping)
            } else if now - sent >= timeout {
                closeConnection(
                    as: .notAnswering(seconds: (now - sent).seconds), polite: false, now: now, into: &actions)
                return
            } else {
                actions.append(.schedule(.keepalive(attempt: attempt), after: timeout - (now - sent)))
                return
            }
        }
        // A server that said going-away is closing; its own deadline covers it, and nothing new may be sent.
        guard !goingAway else { return }
        let silent = now - heard
        guard silent >= interval else {
            actions.append(.schedule(.keepalive(attempt: attempt), after: interval - silent))
            return
        }
        pingSentAt = now
        tell(.ping, into: &actions)
        actions.append(.schedule(.keepalive(attempt: attempt), after: timeout))
    }

    /// Closes for good: the connection, the attempts, every request (`ClientError.closed`).
    mutating func close() -> [Action] {
        guard !closed else { return [] }
        closed = true
        var actions: [Action] = []
        if reconnectPending {
            reconnectPending = false
            actions.append(.cancel(.reconnect))
        }
        if phase != .idle {
            actions.append(.closeConnection(polite: true))
            ended(.closedByClient, now: nil, into: &actions)
        }
        tell(.close, into: &actions)
        report(.offline, into: &actions)
        if awaitingFirstOutcome {
            awaitingFirstOutcome = false
            actions.append(.firstOutcome(.closedByClient))
        }
        return actions
    }

    // MARK: - Frames

    /// The frames of one read: the welcome first, a going-away wherever it comes, then the rest (answers and
    /// subscription events) for the request table, in order.
    mutating func received(_ frames: [Frame], attempt: Int, now: ContinuousClock.Instant) -> [Action] {
        guard attempt == self.attempt else { return [] }
        if phase == .ready { lastHeard = now }
        var actions: [Action] = []
        var rest: [Frame] = []
        for frame in frames {
            if phase == .awaitingWelcome {
                handleFirst(frame, now: now, into: &actions)
                continue
            }
            guard phase == .ready else { break }
            // A going-away that does not decode is left in `rest`, whose decoding ends the connection as a bad frame.
            if frame.type == Message.Kind.goingAway.rawValue, frame.requestID == 0,
               case .goingAway(let code, _)? = try? Message(frame: frame) {
                if goingAwayCode == nil {
                    // The server closes once its writes in flight are answered; do not wait for ever if it does not.
                    actions.append(.schedule(.goingAway(attempt: attempt), after: Self.goingAwayGrace))
                }
                goingAwayCode = code
                report(.reconnecting, into: &actions)
                continue
            }
            rest.append(frame)
        }
        if !rest.isEmpty, phase == .ready { tell(.answer(rest), into: &actions) }
        return actions
    }

    private mutating func handleFirst(_ frame: Frame, now: ContinuousClock.Instant, into actions: inout [Action]) {
        let message: Message
        do throws(WireError) {
            message = try Message(frame: frame)
        } catch {
            closeConnection(as: .lost("bad frame from the server: \(error)"), polite: false, now: now, into: &actions)
            return
        }
        switch message {
        case .welcome(let version, let revision, let maxFrameSize, let role, let server):
            live(Welcome(version: version, revision: revision, maxFrameSize: maxFrameSize, role: role,
                         serverName: server),
                 now: now, into: &actions)
        case .error(let code, let text), .goingAway(let code, let text):
            closeConnection(as: .rejected(code, text), polite: false, now: now, into: &actions)
        default:
            closeConnection(
                as: .lost("the server answered hello with \(message.kind)"), polite: false, now: now, into: &actions)
        }
    }

    // MARK: - Steps

    /// Tells the request table of `event`, with the connection as it is now.
    private func tell(_ event: TableEvent, into actions: inout [Action]) {
        actions.append(.requests(event, link))
    }

    private mutating func report(_ state: ConnectionState, into actions: inout [Action]) {
        guard state != reportedState else { return }
        reportedState = state
        actions.append(.reportState(state))
    }

    private mutating func live(_ welcome: Welcome, now: ContinuousClock.Instant, into actions: inout [Action]) {
        phase = .ready
        actions.append(.cancel(.connect(attempt: attempt)))
        everLive = true
        liveSince = now
        lastFailure = nil
        actions.append(.reportFailure(nil))
        attemptsSinceLive = 0
        actions.append(.reportAttempts(0))
        self.welcome = welcome
        lastHeard = now
        pingSentAt = nil
        if let interval = configuration.keepalive {
            actions.append(.schedule(.keepalive(attempt: attempt), after: interval))
        }
        actions.append(.welcomed(welcome))
        report(.live, into: &actions)
        if awaitingFirstOutcome {
            awaitingFirstOutcome = false
            actions.append(.firstOutcome(nil))
        }
        tell(.ready, into: &actions)
    }

    /// Closes the current connection ourselves (with close_notify when `polite`) and takes its end as `reason`:
    /// the request table's `closeConnection`.
    mutating func close(as reason: ConnectionEnd, polite: Bool, now: ContinuousClock.Instant) -> [Action] {
        guard phase != .idle else { return [] }
        var actions: [Action] = []
        closeConnection(as: reason, polite: polite, now: now, into: &actions)
        return actions
    }

    private mutating func closeConnection(
        as reason: ConnectionEnd, polite: Bool = true, now: ContinuousClock.Instant, into actions: inout [Action]
    ) {
        actions.append(.closeConnection(polite: polite))
        ended(reason, now: now, into: &actions)
    }

    /// The current connection is over: forget what was sent on it, then retry, fail over, or give up.
    /// `now` is nil only when the client closes (nothing is retried then).
    private mutating func ended(_ end: ConnectionEnd, now: ContinuousClock.Instant?, into actions: inout [Action]) {
        var healthy = false
        if let liveSince, let now { healthy = now - liveSince >= configuration.reconnect.healthyAfter }
        actions.append(.cancel(.connect(attempt: attempt)))
        if goingAway { actions.append(.cancel(.goingAway(attempt: attempt))) }
        if phase == .ready, configuration.keepalive != nil { actions.append(.cancel(.keepalive(attempt: attempt))) }
        lastHeard = nil
        pingSentAt = nil
        if phase == .awaitingWelcome {
            switch end {
            // The server answers frames in order and closes at the first it refuses: a refusal in place of the
            // welcome (or TLS refused, or its close_notify, which come behind anything it sent) means hello was
            // never accepted, so nothing behind it was done. Any other end may have come after the server did it.
            case .rejected, .tlsRefused: tell(.refusedBeforeWelcome, into: &actions)
            default: break
            }
        }
        phase = .idle
        goingAwayCode = nil
        liveSince = nil
        welcome = nil
        tell(.lost, into: &actions)
        guard !closed, let now else { return }
        if case .closedByClient = end { return }
        lastFailure = end
        actions.append(.reportFailure(end))
        failures = healthy ? 0 : failures + 1
        var delay = configuration.reconnect.delay(afterFailures: failures, random: random())
        // Given several servers, a lost or failed connection moves on to the next one (with the backoff above:
        // at once after a healthy connection), and a first connection fails only once each was tried.
        if servers.count > 1 {
            serverIndex += 1
            if awaitingFirstOutcome, serverIndex < servers.count {
                scheduleAttempt(after: .zero, into: &actions)
                return
            }
        }
        if awaitingFirstOutcome {
            // A caller that waits for the first connection wants its failure, not endless retries: only a server
            // not (yet) reachable is tried again, and only until the deadline.
            if end.isWorthRetrying, let firstDeadline, firstDeadline - now > .milliseconds(20) {
                // The last try is made just before the deadline rather than given up one backoff early.
                let wait = min(delay, firstDeadline - now - .milliseconds(10))
                report(.connecting, into: &actions)
                scheduleAttempt(after: wait, into: &actions)
                return
            }
            awaitingFirstOutcome = false
            actions.append(.firstOutcome(end))
            actions.append(contentsOf: close())
            return
        }
        if case .tlsRefused(let error) = end {
            // Certificates and TLS do not fix themselves on a retry: the waiting requests get the reason now, and
            // the next try comes now and then, not several times a second.
            tell(.failAll(ClientError.tlsRefused(server: configuration.server, error)), into: &actions)
            delay = max(delay, configuration.reconnect.refusedDelay)
        }
        if delay != .zero {
            report(everLive ? .reconnecting : .offline, into: &actions)
            if case .tlsRefused = end { report(.offline, into: &actions) }
        }
        scheduleAttempt(after: delay, into: &actions)
    }

    private mutating func scheduleAttempt(after delay: Duration, into actions: inout [Action]) {
        reconnectPending = true
        actions.append(.schedule(.reconnect, after: delay))
    }

    /// Someone is waiting for an answer before the first connection was ever made: try now rather than at the
    /// end of the backoff.
    mutating func requestWaiting(now: ContinuousClock.Instant) -> [Action] {
        guard phase == .idle, reconnectPending, !everLive else { return [] }
        var actions: [Action] = []
        makeAttempt(now: now, into: &actions)
        return actions
    }
}
