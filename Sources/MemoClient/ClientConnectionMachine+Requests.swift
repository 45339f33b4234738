import MemoModel
import MemoWire

/// Requests, the frames that answer them and the subscriptions: which request goes out when, which is resent
/// on the next connection (any the connection died before answering) and which never is (one the server
/// refused as a frame).
extension ClientConnectionMachine {
    // MARK: - Requests

    mutating func allocateID() -> UInt32 {
        let id = nextID
        nextID = nextID == UInt32.max ? 2 : nextID + 1
        // Never 0 (no request) nor 1 (hello's id).
        if nextID < 2 { nextID = 2 }
        return id < 2 ? allocateID() : id
    }

    /// A request to send now if the connection is ready, else on the next one, until its deadline.
    /// - Returns: the request's id (its `complete` action carries it) and what to do.
    mutating func submit(
        _ message: Message, timeout: Duration?, now: ContinuousClock.Instant
    ) -> (id: UInt32, actions: [Action]) {
        let id = allocateID()
        if closed { return (id, [.complete(id, .failure(ClientError.closed), attempts: 0)]) }
        let timeout = timeout ?? configuration.requestTimeout
        requests[id] = PendingRequest(message: message, frame: message.frame(requestID: id), timeout: timeout)
        var actions: [Action] = [.schedule(.request(id), after: timeout)]
        transmit(id, into: &actions)
        hurryFirstConnection(now: now, into: &actions)
        return (id, actions)
    }

    mutating func transmit(_ id: UInt32, into actions: inout [Action]) {
        guard isReady, let request = requests[id], request.sentOn == nil else { return }
        if let limit = welcome?.maxFrameSize, request.frame.count > Int(limit) {
            // The server would refuse it and close; sending it again on every reconnect would refuse it again.
            finish(id, .failure(ClientError.server(
                code: .frameTooLarge,
                message: "the request is \(request.frame.count) bytes, over the server's frame limit of \(limit)")),
                into: &actions)
            return
        }
        if let version = welcome?.version, request.message.minimumVersion > version {
            // Sent, it would be a type the server does not know, which closes the connection.
            finish(id, .failure(ServerTooOldError(
                server: configuration.server, speaks: version, needs: request.message.minimumVersion)),
                into: &actions)
            return
        }
        let current = attempt
        requests[id]?.sentOn = current
        requests[id]?.attempts += 1
        actions.append(.send(request.frame))
    }

    mutating func expire(_ id: UInt32, into actions: inout [Action]) {
        guard let request = requests.removeValue(forKey: id) else { return }
        let server = configuration.server
        if request.message.isWrite, request.attempts > 0 {
            // It went out and no answer came: the server may have done it. Never "timed out", never success.
            let unknown = MemoError.outcomeUnknown(
                "the write was sent to \(server) and no answer came within \(request.timeout.secondsText) s; "
                    + "it may or may not have been applied")
            actions.append(.complete(id, .failure(unknown), attempts: request.attempts))
            return
        }
        let error: ClientError
        switch welcome == nil ? lastFailure : nil {
        case .unreachable(let reason)?, .unresolved(let reason)?: error = .unreachable(server: server, reason: reason)
        case .tlsRefused(let tlsError)?: error = .tlsRefused(server: server, tlsError)
        case .rejected(let code, let message)?: error = .server(code: code, message: message)
        default: error = .timedOut(server: server, seconds: request.timeout.seconds)
        }
        actions.append(.complete(id, .failure(error), attempts: request.attempts))
    }

    mutating func finish(_ id: UInt32, _ result: Result<Reply, any Error>, into actions: inout [Action]) {
        guard let request = requests.removeValue(forKey: id) else { return }
        actions.append(.cancel(.request(id)))
        actions.append(.complete(id, result, attempts: request.attempts))
    }

    /// Fails every waiting request with `error`, except that a write already sent fails as outcome-unknown: the
    /// server may have done it before the connection was lost.
    mutating func failAll(_ error: any Error, into actions: inout [Action]) {
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
    private mutating func failSentRequests(_ error: any Error, into actions: inout [Action]) {
        guard phase != .idle else { return }
        let sent = requests.filter { $0.value.sentOn == attempt }.keys.sorted()
        for id in sent { finish(id, .failure(error), into: &actions) }
    }

    // MARK: - Frames

    /// The frames of one read: the welcome first, a going-away wherever it comes, then answers and subscription
    /// events in order (each subscription's events of the read delivered as one batch).
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
        if !rest.isEmpty, phase == .ready { answer(rest, now: now, into: &actions) }
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

    private mutating func answer(_ frames: [Frame], now: ContinuousClock.Instant, into actions: inout [Action]) {
        var batches = SubscriptionBatches()
        for frame in frames {
            let message: Message
            do throws(WireError) {
                message = try Message(frame: frame)
            } catch {
                closeConnection(as: .lost("bad frame from the server: \(error)"), now: now, into: &actions)
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
                    closeConnection(as: .lost("server error \(code): \(text)"), now: now, into: &actions)
                    return
                }
                switch event {
                case .historyGone, .failed:
                    // The server ended this subscription; deliver what came, then start it again.
                    subscriptionByRequest[frame.requestID] = nil
                    subscriptions[token]?.requestID = nil
                    deliver(&batches, into: &actions)
                    if case .historyGone = event { startSubscription(token, into: &actions) }
                default:
                    break
                }
                continue
            }
            guard let request = requests[frame.requestID] else {
                if frame.requestID == 0, case .error(let code, let text) = message {
                    if code.refusesTheFrame {
                        failSentRequests(ClientError.server(code: code, message: text), into: &actions)
                    }
                    closeConnection(as: .lost("server error \(code): \(text)"), now: now, into: &actions)
                    return
                }
                continue  // the answer to a request that timed out
            }
            let id = frame.requestID
            switch message {
            case .memos(let revision, let last, let memos):
                requests[id]?.chunks.append(contentsOf: memos)
                if last {
                    let all = requests[id]?.chunks ?? []
                    finish(id, .success(.list(revision: revision, memos: all)), into: &actions)
                }
            case .page(let revision, let last, let more, let memos):
                requests[id]?.chunks.append(contentsOf: memos)
                if last {
                    let all = requests[id]?.chunks ?? []
                    finish(id, .success(.page(ListPage(revision: revision, memos: all, more: more))), into: &actions)
                }
            case .error(let code, let text):
                let error = ClientError.fromServer(code: code, message: text, request: request.message)
                finish(id, .failure(error), into: &actions)
                if code.refusesTheFrame {
                    // The server closes now; the requests after this one in the pipeline did nothing wrong and are
                    // resent on the next connection.
                    deliver(&batches, into: &actions)
                    closeConnection(as: .lost("server error \(code): \(text)"), now: now, into: &actions)
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
    mutating func subscribe(token: Int) -> [Action] {
        guard !closed else { return [] }
        subscriptions[token] = Subscription(requestID: nil)
        var actions: [Action] = []
        startSubscription(token, into: &actions)
        return actions
    }

    /// Ends the subscription's current run on the server and starts it again from where its owner now says.
    mutating func restart(_ token: Int, now: ContinuousClock.Instant) -> [Action] {
        guard subscriptions[token] != nil else { return [] }
        var actions: [Action] = []
        stopOnServer(token, now: now, into: &actions)
        startSubscription(token, into: &actions)
        return actions
    }

    mutating func unsubscribe(_ token: Int, now: ContinuousClock.Instant) -> [Action] {
        guard subscriptions[token] != nil else { return [] }
        var actions: [Action] = []
        stopOnServer(token, now: now, into: &actions)
        subscriptions[token] = nil
        return actions
    }

    private mutating func stopOnServer(_ token: Int, now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard let old = subscriptions[token]?.requestID else { return }
        subscriptions[token]?.requestID = nil
        subscriptionByRequest[old] = nil
        guard isReady else { return }
        actions.append(contentsOf: submit(.unsubscribe(subscription: old), timeout: nil, now: now).actions)
    }

    mutating func startSubscription(_ token: Int, into actions: inout [Action]) {
        guard isReady, let subscription = subscriptions[token], subscription.requestID == nil else { return }
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
        case .create, .update, .delete: return true
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
