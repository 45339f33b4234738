import MemoCore
import MemoNet
import MemoTLS
import MemoWire

/// The answer to a request.
enum Reply: Sendable {
    case message(Message)
    /// The chunks of a `list`, joined.
    case list(revision: UInt64, memos: [Memo])
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

/// The client's connection manager: one connection at a time, reconnecting with backoff, a table of requests
/// by id (each with a deadline, each resent on the next connection if the last one died before answering),
/// and subscriptions restarted on every new connection from where their owner says.
///
/// Confined to `loop`: every method runs on the loop's thread (`MemoConnection` hops there), so no state here
/// needs a lock. `@unchecked Sendable` only so that closures scheduled on the loop may capture it.
final class ClientCore: @unchecked Sendable {
    final class Request {
        let id: UInt32
        let message: Message
        let frame: [UInt8]
        var attempts = 0
        var sentOn: ObjectIdentifier?
        var chunks: [Memo] = []
        var timer: TimerHandle?
        let completion: (Result<Reply, any Error>, Int) -> Void

        init(id: UInt32, message: Message, completion: @escaping (Result<Reply, any Error>, Int) -> Void) {
            self.id = id
            self.message = message
            self.frame = message.frame(requestID: id)
            self.completion = completion
        }
    }

    final class Subscription {
        let token: Int
        var requestID: UInt32?
        /// Where to start: nil for a snapshot, else the last revision applied.
        let start: () -> UInt64?
        let handler: ([SubscriptionEvent]) -> Void

        init(token: Int, start: @escaping () -> UInt64?, handler: @escaping ([SubscriptionEvent]) -> Void) {
            self.token = token
            self.start = start
            self.handler = handler
        }
    }

    let loop: EventLoop
    let configuration: ClientConfiguration
    let tls: TLSContext
    let state: Subject<ConnectionState>
    /// Attempts made since the connection was last live (0 while live), for a status bar.
    let attempts: Subject<Int>
    private var connection: WireConnection?
    private var nextID: UInt32 = 1
    private var requests: [UInt32: Request] = [:]
    private var subscriptions: [Int: Subscription] = [:]
    private var subscriptionByRequest: [UInt32: Int] = [:]
    private var failures = 0
    /// Which of `configuration.servers` the next attempt uses.
    private var serverIndex = 0
    private var everLive = false
    /// When the current connection was welcomed: only one that stays up `healthyAfter` resets the backoff, so
    /// that a server (or a path) that welcomes and then fails at once is retried with growing delays.
    private var liveSince: ContinuousClock.Instant?
    private var closed = false
    private var reconnectTimer: TimerHandle?
    /// Why the last attempt failed, for requests that time out while not connected.
    private var lastFailure: ConnectionEnd?
    /// Told of the first connection's outcome (`MemoConnection.connect` waits on it).
    var onFirstOutcome: ((ConnectionEnd?) -> Void)?
    /// Until when a first connection that cannot reach the server is tried again (with backoff) before
    /// `onFirstOutcome` hears of the failure: a server that is still starting is worth waiting for.
    var firstDeadline: ContinuousClock.Instant?
    /// Told of every failed attempt and lost connection (nil once live again), for a status line.
    var onFailure: ((ConnectionEnd?) -> Void)?
    /// Told of every welcome (the revision is the server's at that moment).
    var onWelcome: ((Welcome) -> Void)?
    private(set) var welcome: Welcome?

    init(
        loop: EventLoop, configuration: ClientConfiguration, tls: TLSContext, state: Subject<ConnectionState>,
        attempts: Subject<Int>
    ) {
        self.loop = loop
        self.configuration = configuration
        self.tls = tls
        self.state = state
        self.attempts = attempts
    }

    private func setState(_ new: ConnectionState) {
        if state.value != new { state.send(new) }
    }

    // MARK: - Connecting

    /// The address `attempt` connects to: one of `configuration.servers`, in turn.
    private var currentServer: String {
        let servers = configuration.servers
        return servers[serverIndex % servers.count]
    }

    func attempt() {
        guard !closed, connection == nil else { return }
        reconnectTimer = nil
        attempts.send((attempts.value ?? 0) + 1)
        setState(everLive ? .reconnecting : .connecting)
        let address: SocketAddress
        let engine: TLSEngine
        do {
            do {
                let hostPort = try HostPort(
                    parsing: currentServer, defaultPort: ClientConfiguration.defaultPort)
                address = try SocketAddress(parsing: hostPort.description)
            } catch let error as HostPort.SyntaxError {
                connectionEnded(nil, .unresolved(error.description))
                return
            } catch let error as NetError {
                connectionEnded(nil, .unresolved(error.message.lowercasedFirst))
                return
            }
            engine = try TLSEngine(context: tls, serverName: ClientConfiguration.host(of: currentServer))
        } catch let error as TLSError {
            connectionEnded(nil, .tlsRefused(error))
            return
        } catch {
            connectionEnded(nil, .unreachable("\(error)"))
            return
        }
        let connection = WireConnection(
            loop: loop, address: address, engine: engine, clientName: configuration.clientName)
        self.connection = connection
        connection.onWelcome = { [unowned self, unowned connection] welcome in self.live(connection, welcome) }
        connection.onFrames = { [unowned self] frames in self.received(frames) }
        connection.onGoingAway = { [unowned self] _, _ in self.setState(.reconnecting) }
        connection.onEnd = { [unowned self, unowned connection] end in self.connectionEnded(connection, end) }
        var timeout = configuration.connectTimeout
        if onFirstOutcome != nil, let firstDeadline {
            timeout = max(.milliseconds(1), min(timeout, firstDeadline - .now))
        }
        connection.start(timeout: timeout)
    }

    private func live(_ connection: WireConnection, _ welcome: Welcome) {
        everLive = true
        liveSince = .now
        lastFailure = nil
        onFailure?(nil)
        attempts.send(0)
        self.welcome = welcome
        onWelcome?(welcome)
        setState(.live)
        if let first = onFirstOutcome {
            onFirstOutcome = nil
            first(nil)
        }
        for subscription in subscriptions.values.sorted(by: { $0.token < $1.token }) { startSubscription(subscription) }
        for id in requests.keys.sorted() { transmit(requests[id]!) }
    }

    private func connectionEnded(_ ended: WireConnection?, _ end: ConnectionEnd) {
        if let ended, connection !== ended { return }
        let healthy = liveSince.map { .now - $0 >= configuration.reconnect.healthyAfter } ?? false
        liveSince = nil
        connection = nil
        welcome = nil
        subscriptionByRequest.removeAll()
        for subscription in subscriptions.values { subscription.requestID = nil }
        for request in requests.values {
            request.sentOn = nil
            request.chunks.removeAll()
        }
        if closed { return }
        if case .closedByClient = end { return }
        lastFailure = end
        onFailure?(end)
        failures = healthy ? 0 : failures + 1
        var delay = configuration.reconnect.delay(afterFailures: failures)
        // Given several servers, a lost or failed connection moves on to the next one (with the backoff above:
        // at once after a healthy connection), and a first connection fails only once each was tried.
        let servers = configuration.servers.count
        if servers > 1 {
            serverIndex += 1
            if onFirstOutcome != nil, serverIndex < servers {
                loop.execute { [self] in self.attempt() }
                return
            }
        }
        if let first = onFirstOutcome {
            // A caller that waits for the first connection wants its failure, not endless retries: only a server
            // not (yet) reachable is tried again, and only until the deadline.
            if end.isWorthRetrying, let firstDeadline, firstDeadline - .now > .milliseconds(20) {
                // The last try is made just before the deadline rather than given up one backoff early.
                let wait = min(delay, firstDeadline - .now - .milliseconds(10))
                setState(.connecting)
                reconnectTimer = loop.schedule(after: wait) { [self] in self.attempt() }
                return
            }
            onFirstOutcome = nil
            first(end)
            close()
            return
        }
        if case .tlsRefused(let error) = end {
            // Certificates and TLS do not fix themselves on a retry: the waiting requests get the reason now, and
            // the next try comes now and then, not several times a second.
            failAll(ClientError.tlsRefused(server: configuration.server, error))
            delay = max(delay, configuration.reconnect.refusedDelay)
        }
        if delay == .zero {
            loop.execute { [self] in self.attempt() }
        } else {
            setState(everLive ? .reconnecting : .offline)
            if case .tlsRefused = end { setState(.offline) }
            reconnectTimer = loop.schedule(after: delay) { [self] in self.attempt() }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        reconnectTimer?.cancel()
        connection?.close()
        connection = nil
        failAll(ClientError.closed)
        subscriptions.removeAll()
        setState(.offline)
        if let first = onFirstOutcome {
            onFirstOutcome = nil
            first(.closedByClient)
        }
    }

    /// Fails the requests sent on the current connection, which the server refused without saying which frame
    /// broke the rules: resending them would break them again, on every reconnect.
    private func failSentRequests(_ error: any Error) {
        guard let connection else { return }
        let sent = requests.values.filter { $0.sentOn == ObjectIdentifier(connection) }.sorted { $0.id < $1.id }
        for request in sent { finish(request.id, .failure(error)) }
    }

    private func failAll(_ error: any Error) {
        let all = requests.values.sorted { $0.id < $1.id }
        requests.removeAll()
        for request in all {
            request.timer?.cancel()
            request.completion(.failure(error), request.attempts)
        }
    }

    // MARK: - Requests

    private func allocateID() -> UInt32 {
        let id = nextID
        nextID = nextID == UInt32.max ? 2 : nextID + 1
        // Never 0 (no request) nor 1 (hello's id).
        if nextID < 2 { nextID = 2 }
        return id < 2 ? allocateID() : id
    }

    func send(
        _ message: Message, timeout: Duration?, completion: @escaping (Result<Reply, any Error>, Int) -> Void
    ) {
        if closed {
            completion(.failure(ClientError.closed), 0)
            return
        }
        let request = Request(id: allocateID(), message: message, completion: completion)
        requests[request.id] = request
        let timeout = timeout ?? configuration.requestTimeout
        let id = request.id
        request.timer = loop.schedule(after: timeout) { [self] in self.expire(id, after: timeout) }
        transmit(request)
        if connection == nil, reconnectTimer != nil, !everLive {
            // Someone is waiting: try now rather than at the end of the backoff.
            reconnectTimer?.cancel()
            attempt()
        }
    }

    private func transmit(_ request: Request) {
        guard let connection, connection.isReady, request.sentOn == nil else { return }
        if let limit = welcome?.maxFrameSize, request.frame.count > Int(limit) {
            // The server would refuse it and close; sending it again on every reconnect would refuse it again.
            finish(request.id, .failure(ClientError.server(
                code: .frameTooLarge,
                message: "the request is \(request.frame.count) bytes, over the server's frame limit of \(limit)")))
            return
        }
        request.sentOn = ObjectIdentifier(connection)
        request.attempts += 1
        connection.send(request.frame)
    }

    private func expire(_ id: UInt32, after timeout: Duration) {
        guard let request = requests.removeValue(forKey: id) else { return }
        let error: ClientError
        switch (welcome == nil ? lastFailure : nil) {
        case .unreachable(let reason)?, .unresolved(let reason)?:
            error = .unreachable(server: configuration.server, reason: reason)
        case .tlsRefused(let tlsError)?: error = .tlsRefused(server: configuration.server, tlsError)
        case .rejected(let code, let message)?: error = .server(code: code, message: message)
        default: error = .timedOut(server: configuration.server, seconds: timeout.seconds)
        }
        request.completion(.failure(error), request.attempts)
    }

    private func finish(_ id: UInt32, _ result: Result<Reply, any Error>) {
        guard let request = requests.removeValue(forKey: id) else { return }
        request.timer?.cancel()
        request.completion(result, request.attempts)
    }

    // MARK: - Frames

    private func received(_ frames: [Frame]) {
        var events: [Int: [SubscriptionEvent]] = [:]
        var order: [Int] = []
        for frame in frames {
            let message: Message
            do throws(WireError) {
                message = try Message(frame: frame)
            } catch {
                connection?.close(as: .lost("bad frame from the server: \(error)"))
                return
            }
            if let token = subscriptionByRequest[frame.requestID] {
                guard let event = Self.subscriptionEvent(message) else { continue }
                if events[token] == nil { order.append(token) }
                events[token, default: []].append(event)
                switch event {
                case .historyGone, .failed:
                    // The server ended this subscription; deliver what came, then start it again.
                    subscriptionByRequest[frame.requestID] = nil
                    subscriptions[token]?.requestID = nil
                    deliver(&events, &order)
                    if let subscription = subscriptions[token], case .historyGone = event {
                        startSubscription(subscription)
                    }
                default:
                    break
                }
                continue
            }
            guard let request = requests[frame.requestID] else {
                if frame.requestID == 0, case .error(let code, let text) = message {
                    if code.refusesTheFrame { failSentRequests(ClientError.server(code: code, message: text)) }
                    connection?.close(as: .lost("server error \(code): \(text)"))
                    return
                }
                continue  // the answer to a request that timed out
            }
            switch message {
            case .memos(let revision, let last, let memos):
                request.chunks.append(contentsOf: memos)
                if last {
                    let all = request.chunks
                    request.chunks = []
                    finish(request.id, .success(.list(revision: revision, memos: all)))
                }
            case .error(let code, let text):
                let error = ClientError.fromServer(code: code, message: text, request: request.message)
                finish(request.id, .failure(error))
                if code.refusesTheFrame {
                    // The server closes now; the requests after this one in the pipeline did nothing wrong and are
                    // resent on the next connection.
                    deliver(&events, &order)
                    connection?.close(as: .lost("server error \(code): \(text)"))
                    return
                }
            default:
                finish(request.id, .success(.message(message)))
            }
        }
        deliver(&events, &order)
    }

    private func deliver(_ events: inout [Int: [SubscriptionEvent]], _ order: inout [Int]) {
        for token in order {
            guard let batch = events[token], let subscription = subscriptions[token] else { continue }
            subscription.handler(batch)
        }
        events.removeAll()
        order.removeAll()
    }

    private static func subscriptionEvent(_ message: Message) -> SubscriptionEvent? {
        switch message {
        case .snapshot(let revision, let last, let memos):
            return .snapshot(revision: revision, last: last, memos: memos)
        case .subscribed(let head): return .subscribed(head: head)
        case .change(let change): return .change(change)
        case .historyGone(let requested, let oldest): return .historyGone(requested: requested, oldestAvailable: oldest)
        case .error(let code, let text): return .failed(code: code, message: text)
        default: return nil
        }
    }

    // MARK: - Subscriptions

    func subscribe(token: Int, start: @escaping () -> UInt64?, handler: @escaping ([SubscriptionEvent]) -> Void) {
        guard !closed else { return }
        let subscription = Subscription(token: token, start: start, handler: handler)
        subscriptions[token] = subscription
        startSubscription(subscription)
    }

    /// Ends the subscription's current run on the server and starts it again from where its owner now says.
    func restart(_ token: Int) {
        guard let subscription = subscriptions[token] else { return }
        stopOnServer(subscription)
        startSubscription(subscription)
    }

    func unsubscribe(_ token: Int) {
        guard let subscription = subscriptions.removeValue(forKey: token) else { return }
        stopOnServer(subscription)
    }

    private func stopOnServer(_ subscription: Subscription) {
        guard let old = subscription.requestID else { return }
        subscription.requestID = nil
        subscriptionByRequest[old] = nil
        if connection?.isReady == true {
            send(.unsubscribe(subscription: old), timeout: nil) { _, _ in }
        }
    }

    private func startSubscription(_ subscription: Subscription) {
        guard let connection, connection.isReady, subscription.requestID == nil else { return }
        let id = allocateID()
        subscription.requestID = id
        subscriptionByRequest[id] = subscription.token
        connection.send(Message.subscribe(after: subscription.start()).frame(requestID: id))
    }
}

extension ConnectionEnd {
    /// Whether a first connection that ended so is worth another try before its deadline: nobody listening yet,
    /// or a server that is starting, stopping or full. A name that does not resolve, TLS and certificate
    /// failures are not: waiting would only delay the same answer.
    var isWorthRetrying: Bool {
        switch self {
        case .unreachable: return true
        case .rejected(let code, _): return code == .shuttingDown || code == .tooManyConnections
        case .unresolved, .timedOut, .tlsRefused, .lost, .closedByClient: return false
        }
    }
}

extension ErrorCode {
    /// The server refused a frame itself (too large, malformed, of a type no request has, bad UTF-8, a reused
    /// id) and closes: the same bytes would be refused again, so they are never resent.
    var refusesTheFrame: Bool {
        self == .malformedFrame || self == .frameTooLarge || self == .unknownMessageType || self == .invalidUTF8
            || self == .duplicateRequestID
    }
}
