import MemoModel
import MemoWire

/// The requests waiting for an answer and the subscriptions, as a value: which request goes out when, which is
/// resent on the next connection (any the connection died before answering) and which never is (one the server
/// refused as a frame), the frames that answer them, and the subscriptions restarted on every connection from
/// where their owner says.
///
/// It knows the connection only through a `ClientConnectionMachine.Link` given with each event (ready or not, its
/// attempt, its welcome), and hears of its changes from the connection machine's `.requests` actions; `ConnectionOwner`
/// carries both ways. Like the connection machine it touches no socket, clock or timer (`RequestTableTests`).
struct RequestTable {
    /// What to do; `ConnectionOwner` runs it (a `closeConnection` goes to the connection machine first).
    enum Action {
        /// Write one frame's bytes on the current connection.
        case send([UInt8])
        /// Send `subscribe` with this id for subscription `token`, from where its owner says once every earlier
        /// action has run (a delivered history-gone has reset it to a snapshot; a lost connection resumes after
        /// the last revision applied).
        case subscribe(token: Int, requestID: UInt32)
        /// The request's answer is due within `after`; `deadlinePassed` when it is not.
        case schedule(request: UInt32, after: Duration)
        case cancel(request: UInt32)
        /// The request's answer (or failure), and how many times it was sent.
        case complete(UInt32, Result<Reply, any Error>, attempts: Int)
        /// The events of one read for one subscription, in order.
        case deliver(token: Int, [SubscriptionEvent])
        /// The server broke the conversation (a bad frame, a refused frame, its own trouble under a
        /// subscription): close the current connection and take its end as `reason`.
        case closeConnection(ConnectionEnd, polite: Bool)
    }

    struct PendingRequest {
        let message: Message
        let frame: [UInt8]
        let timeout: Duration
        var attempts = 0
        /// The attempt whose connection carried it; nil when it is still to be sent.
        var sentOn: Int?
        /// Sent right behind hello, without waiting for the welcome (`submit(behindHello:)`).
        var behindHello = false
        /// A list's chunks as they came, joined once after the last (`collect`).
        var chunks: [[Memo]] = []
    }

    private struct Subscription {
        /// The id of its current run on the server; nil while not running.
        var requestID: UInt32?
    }

    typealias Link = ClientConnectionMachine.Link

    private let configuration: ClientConfiguration
    private var nextID: UInt32 = 2
    private var requests: [UInt32: PendingRequest] = [:]
    private var subscriptions: [Int: Subscription] = [:]
    private var subscriptionByRequest: [UInt32: Int] = [:]
    /// The authors of the memos decoded so far, shared: a mirror of a million memos by a few certificates holds a
    /// few authors.
    private var authors = AuthorInterner()

    init(configuration: ClientConfiguration) {
        self.configuration = configuration
    }

    // MARK: - Reading

    /// How many requests wait for an answer.
    var pendingCount: Int { requests.count }

    /// How many times request `id` was sent; nil when it no longer waits.
    func attempts(of id: UInt32) -> Int? { requests[id]?.attempts }

    /// The subscription is held (subscribed and not ended).
    func isSubscribed(_ token: Int) -> Bool { subscriptions[token] != nil }

    // MARK: - The connection's news

    /// What the connection machine's `.requests` action says, with the connection as it is now.
    mutating func handle(_ event: ClientConnectionMachine.TableEvent, link: Link) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .helloSent:
            for id in requests.keys.sorted() where requests[id]?.behindHello == true {
                transmit(id, link: link, into: &actions)
            }
        case .refusedBeforeWelcome:
            for id in requests.keys.sorted() where requests[id]?.sentOn == link.attempt {
                requests[id]?.sentOn = nil
                requests[id]?.attempts -= 1
            }
        case .ready:
            for token in subscriptions.keys.sorted() { startSubscription(token, link: link, into: &actions) }
            for id in requests.keys.sorted() { transmit(id, link: link, into: &actions) }
        case .lost:
            subscriptionByRequest.removeAll()
            for token in subscriptions.keys { subscriptions[token]?.requestID = nil }
            for id in requests.keys {
                requests[id]?.sentOn = nil
                requests[id]?.chunks.removeAll()
            }
        case .failAll(let error):
            failAll(error, into: &actions)
        case .close:
            failAll(ClientError.closed, into: &actions)
            subscriptions.removeAll()
            subscriptionByRequest.removeAll()
        case .ping:
            // The pong's id is not a request's: `answer` drops it, and its arrival counts as life like any frame.
            let id = allocateID()
            actions.append(.send(Message.ping(nonce: UInt64(id)).frame(requestID: id)))
        case .answer(let frames):
            answer(frames, link: link, into: &actions)
        }
        return actions
    }

    // MARK: - Requests

    private mutating func allocateID() -> UInt32 {
        let id = nextID
        nextID = nextID == UInt32.max ? 2 : nextID + 1
        // Never 0 (no request) nor 1 (hello's id).
        if nextID < 2 { nextID = 2 }
        return id < 2 ? allocateID() : id
    }

    /// A request to send now if the connection is ready, else on the next one, until its deadline.
    /// - Parameter behindHello: send it right behind hello, without waiting for the welcome (a `create`, whose
    ///   bytes are the same in every protocol version, of at most `behindHelloLimit` bytes; any other waits): a
    ///   script's one-request command saves a round trip so. The answer is still decoded by the version the
    ///   welcome agreed, which comes first; a refused hello leaves it unsent (`refusedBeforeWelcome`).
    /// - Returns: the request's id (its `complete` action carries it) and what to do.
    mutating func submit(_ message: Message, timeout: Duration?, link: Link, behindHello: Bool = false)
        -> (id: UInt32, actions: [Action])
    {
        let id = allocateID()
        if link.closed { return (id, [.complete(id, .failure(ClientError.closed), attempts: 0)]) }
        let timeout = timeout ?? configuration.requestTimeout
        var request = PendingRequest(message: message, frame: message.frame(requestID: id), timeout: timeout)
        if behindHello, case .create = message, request.frame.count <= Self.behindHelloLimit {
            request.behindHello = true
        }
        requests[id] = request
        var actions: [Action] = [.schedule(request: id, after: timeout)]
        transmit(id, link: link, into: &actions)
        return (id, actions)
    }

    /// The largest request sent behind hello: well under any server's frame limit, which only the welcome says.
    static let behindHelloLimit = 64 << 10

    private mutating func transmit(_ id: UInt32, link: Link, into actions: inout [Action]) {
        guard let request = requests[id], request.sentOn == nil,
              link.isReady || (link.awaitingWelcome && request.behindHello)
        else { return }
        if let limit = link.welcome?.maxFrameSize, request.frame.count > Int(limit) {
            // The server would refuse it and close; sending it again on every reconnect would refuse it again.
            finish(id, .failure(ClientError.server(
                code: .frameTooLarge,
                message: "the request is \(request.frame.count) bytes, over the server's frame limit of \(limit)")),
                into: &actions)
            return
        }
        if let version = link.welcome?.version, request.message.minimumVersion > version {
            // Sent, it would be a type the server does not know, which closes the connection.
            finish(id, .failure(ServerTooOldError(
                server: configuration.server, speaks: version, needs: request.message.minimumVersion)),
                into: &actions)
            return
        }
        requests[id]?.sentOn = link.attempt
        requests[id]?.attempts += 1
        // An update gains its flags byte from version 3 (the only request whose bytes differ by version).
        if case .update = request.message, let version = link.welcome?.version,
           version >= WireProtocol.authorsVersion {
            actions.append(.send(request.message.frame(requestID: id, version: version)))
            return
        }
        actions.append(.send(request.frame))
    }

    /// The request's deadline passed without an answer.
    mutating func expire(_ id: UInt32, link: Link) -> [Action] {
        guard let request = requests.removeValue(forKey: id) else { return [] }
        let server = configuration.server
        if request.message.isWrite, request.attempts > 0 {
            // It went out and no answer came: the server may have done it. Never "timed out", never success.
            let unknown = MemoError.outcomeUnknown(
                "the write was sent to \(server) and no answer came within \(request.timeout.secondsText) s; "
                    + "it may or may not have been applied")
            return [.complete(id, .failure(unknown), attempts: request.attempts)]
        }
        let error: ClientError
        switch link.welcome == nil ? link.lastFailure : nil {
        case .unreachable(let reason)?, .unresolved(let reason)?: error = .unreachable(server: server, reason: reason)
        case .tlsRefused(let tlsError)?: error = .tlsRefused(server: server, tlsError)
        case .rejected(let code, let message)?: error = .server(code: code, message: message)
        default: error = .timedOut(server: server, seconds: request.timeout.seconds)
        }
        return [.complete(id, .failure(error), attempts: request.attempts)]
    }

    /// Adds a list chunk's memos to request `id`'s, and gives them all back, joined in order, after the last
    /// chunk. The chunks are kept as they came and joined once: appending each to one growing array copied every
    /// memo received so far at each chunk whenever another copy of the request shared that array (a list of a
    /// million memos took 10.5 s instead of 2.3 s).
    private mutating func collect(_ memos: [Memo], for id: UInt32, last: Bool) -> [Memo]? {
        guard var request = requests.removeValue(forKey: id) else { return nil }
        request.chunks.append(memos)
        var all: [Memo]?
        if last, request.chunks.count == 1 {
            all = request.chunks[0]
            request.chunks = []
        } else if last {
            var joined: [Memo] = []
            joined.reserveCapacity(request.chunks.reduce(0) { $0 + $1.count })
            for chunk in request.chunks { joined.append(contentsOf: chunk) }
            request.chunks = []
            all = joined
        }
        requests[id] = request
        return all
    }

    private mutating func finish(_ id: UInt32, _ result: Result<Reply, any Error>, into actions: inout [Action]) {
        guard let request = requests.removeValue(forKey: id) else { return }
        actions.append(.cancel(request: id))
        actions.append(.complete(id, result, attempts: request.attempts))
    }

    /// Fails every waiting request with `error`, except that a write already sent fails as outcome-unknown: the
    /// server may have done it before the connection was lost.
    private mutating func failAll(_ error: any Error, into actions: inout [Action]) {
        for id in requests.keys.sorted() {
            guard let request = requests[id] else { continue }
            if request.message.isWrite, request.attempts > 0 {
                let unknown = MemoError.outcomeUnknown(
                    "the write was sent to \(configuration.server), then the connection failed (\(error)); "
                        + "it may or may not have been applied")
                finish(id, .failure(unknown), into: &actions)
            } else {
                finish(id, .failure(error), into: &actions)
            }
        }
    }

    /// Fails the requests sent on the current connection, which the server refused without saying which frame
    /// broke the rules: resending them would break them again, on every reconnect.
    private mutating func failSentRequests(_ error: any Error, link: Link, into actions: inout [Action]) {
        guard link.isConnected else { return }
        let sent = requests.filter { $0.value.sentOn == link.attempt }.keys.sorted()
        for id in sent { finish(id, .failure(error), into: &actions) }
    }

    // MARK: - Frames

    private mutating func answer(_ frames: [Frame], link: Link, into actions: inout [Action]) {
        var batches = SubscriptionBatches()
        for frame in frames {
            let message: Message
            do throws(WireError) {
                message = try Message(
                    frame: frame, version: link.welcome?.version ?? WireProtocol.minimumVersion, authors: &authors)
            } catch {
                actions.append(.closeConnection(.lost("bad frame from the server: \(error)"), polite: true))
                return
            }
            if let token = subscriptionByRequest[frame.requestID] {
                guard let event = SubscriptionEvent(message) else { continue }
                batches.append(event, for: token)
                if case .failed(let code, let text) = event, code.isTheServersOwnTrouble {
                    // The server cannot serve the subscription now (its store is unreachable, it lags, it stops):
                    // nothing is wrong with the request. Like a lost connection: connect again with backoff (to
                    // the next address when there are several) and resume after the last applied revision. Ending
                    // the subscription here would leave a watcher waiting for changes that never come.
                    batches.drop(token)
                    deliver(&batches, into: &actions)
                    subscriptionByRequest[frame.requestID] = nil
                    subscriptions[token]?.requestID = nil
                    actions.append(.closeConnection(.lost("server error \(code): \(text)"), polite: true))
                    return
                }
                switch event {
                case .historyGone, .failed:
                    // The server ended this subscription; deliver what came, then start it again.
                    subscriptionByRequest[frame.requestID] = nil
                    subscriptions[token]?.requestID = nil
                    deliver(&batches, into: &actions)
                    if case .historyGone = event { startSubscription(token, link: link, into: &actions) }
                default:
                    break
                }
                continue
            }
            // Only the request's message is taken: a copy of the whole request would share its chunks' storage
            // while `collect` adds to them, and the optimizer does not always end that copy early.
            guard let sent = requests[frame.requestID]?.message else {
                if frame.requestID == 0, case .error(let code, let text) = message {
                    if code.refusesTheFrame {
                        failSentRequests(ClientError.server(code: code, message: text), link: link, into: &actions)
                    }
                    actions.append(.closeConnection(.lost("server error \(code): \(text)"), polite: true))
                    return
                }
                continue  // the answer to a request that timed out
            }
            let id = frame.requestID
            switch message {
            case .memos(let revision, let last, let memos):
                if let all = collect(memos, for: id, last: last) {
                    finish(id, .success(.list(revision: revision, memos: all)), into: &actions)
                }
            case .page(let revision, let last, let more, let memos):
                if let all = collect(memos, for: id, last: last) {
                    finish(id, .success(.page(ListPage(revision: revision, memos: all, more: more))), into: &actions)
                }
            case .error(let code, let text):
                let error = ClientError.fromServer(code: code, message: text, request: sent)
                finish(id, .failure(error), into: &actions)
                if code.refusesTheFrame {
                    // The server closes now; the requests after this one in the pipeline did nothing wrong and are
                    // resent on the next connection.
                    deliver(&batches, into: &actions)
                    actions.append(.closeConnection(.lost("server error \(code): \(text)"), polite: true))
                    return
                }
            default:
                finish(id, .success(.message(message)), into: &actions)
            }
        }
        deliver(&batches, into: &actions)
    }

    private func deliver(_ batches: inout SubscriptionBatches, into actions: inout [Action]) {
        for (token, events) in batches.take() where subscriptions[token] != nil {
            actions.append(.deliver(token: token, events))
        }
    }

    // MARK: - Subscriptions

    /// Subscribes on this and every later connection.
    mutating func subscribe(token: Int, link: Link) -> [Action] {
        guard !link.closed else { return [] }
        subscriptions[token] = Subscription(requestID: nil)
        var actions: [Action] = []
        startSubscription(token, link: link, into: &actions)
        return actions
    }

    /// Ends the subscription's current run on the server and starts it again from where its owner now says.
    mutating func restart(_ token: Int, link: Link) -> [Action] {
        guard subscriptions[token] != nil else { return [] }
        var actions: [Action] = []
        stopOnServer(token, link: link, into: &actions)
        startSubscription(token, link: link, into: &actions)
        return actions
    }

    mutating func unsubscribe(_ token: Int, link: Link) -> [Action] {
        guard subscriptions[token] != nil else { return [] }
        var actions: [Action] = []
        stopOnServer(token, link: link, into: &actions)
        subscriptions[token] = nil
        return actions
    }

    private mutating func stopOnServer(_ token: Int, link: Link, into actions: inout [Action]) {
        guard let old = subscriptions[token]?.requestID else { return }
        subscriptions[token]?.requestID = nil
        subscriptionByRequest[old] = nil
        guard link.isReady else { return }
        actions.append(contentsOf: submit(.unsubscribe(subscription: old), timeout: nil, link: link).actions)
    }

    private mutating func startSubscription(_ token: Int, link: Link, into actions: inout [Action]) {
        guard link.isReady, let subscription = subscriptions[token], subscription.requestID == nil else { return }
        let id = allocateID()
        subscriptions[token]?.requestID = id
        subscriptionByRequest[id] = token
        actions.append(.subscribe(token: token, requestID: id))
    }
}

/// The subscription events of one read, by subscription, in the order the subscriptions first appeared.
private struct SubscriptionBatches {
    private var events: [Int: [SubscriptionEvent]] = [:]
    private var order: [Int] = []

    mutating func append(_ event: SubscriptionEvent, for token: Int) {
        if events[token] == nil { order.append(token) }
        events[token, default: []].append(event)
    }

    /// Forgets the last event of `token`'s batch (one the machine handles itself instead of delivering).
    mutating func drop(_ token: Int) {
        events[token]?.removeLast()
        if events[token]?.isEmpty == true {
            events[token] = nil
            order.removeAll { $0 == token }
        }
    }

    mutating func take() -> [(Int, [SubscriptionEvent])] {
        defer {
            events.removeAll()
            order.removeAll()
        }
        return order.compactMap { token in events[token].map { (token, $0) } }
    }
}

extension SubscriptionEvent {
    init?(_ message: Message) {
        switch message {
        case .snapshot(let revision, let last, let memos):
            self = .snapshot(revision: revision, last: last, memos: memos)
        case .subscribed(let head): self = .subscribed(head: head)
        case .change(let change): self = .change(change)
        case .historyGone(let requested, let oldest):
            self = .historyGone(requested: requested, oldestAvailable: oldest)
        case .error(let code, let text): self = .failed(code: code, message: text)
        default: return nil
        }
    }
}

extension Message {
    /// A create, update or delete: a request whose outcome matters when its answer is lost.
    var isWrite: Bool {
        switch self {
        case .create, .update, .delete, .restore: return true
        default: return false
        }
    }
}

extension ErrorCode {
    /// The server's own trouble, not the request's (500 internal, 501 storage unavailable, 503 shutting down,
    /// 504 lagging): the same request may succeed later, or now on another server.
    var isTheServersOwnTrouble: Bool {
        self == .internalError || self == .storageUnavailable || self == .shuttingDown || self == .lagging
    }

    /// The server refused a frame itself (too large, malformed, of a type no request has, bad UTF-8, a reused
    /// id) and closes: the same bytes would be refused again, so they are never resent.
    var refusesTheFrame: Bool {
        self == .malformedFrame || self == .frameTooLarge || self == .unknownMessageType || self == .invalidUTF8
            || self == .duplicateRequestID
    }
}
