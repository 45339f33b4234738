import Foundation
import MemoDiagnostics
import MemoModel
import MemoWire

/// What a session asks its connection to do.
enum SessionAction {
    /// Queue these frame bytes for the peer.
    case send([UInt8])
    /// Queue the `memo` frame of this memo for this request (a get's answer): encoded by the connection straight
    /// into its queue (`OutboundQueue.append(memo:requestID:)`), with no `Message` and no array of its own.
    case sendMemo(requestID: UInt32, Memo)
    /// Queue the list's memos as `memos` chunks for this request.
    case sendList(requestID: UInt32, revision: UInt64, memos: [Memo])
    /// Queue a page of the list as `page` chunks for this request (`more`: memos follow it).
    case sendPage(requestID: UInt32, ListPage)
    /// Run a write on the store; answer with `ServerSession.completed` when it is done.
    case submit(requestID: UInt32, op: WriteOp)
    /// Start a subscription for this request id.
    case subscribe(requestID: UInt32, start: WatchStart)
    /// End the subscription with this id.
    case unsubscribe(requestID: UInt32)
    /// Hello came and is answered (the `.send` after this): the connection is open.
    case helloAccepted
    /// Send an error or going-away frame (already queued by a `.send` before it) and close.
    case close(reason: String)
    /// Write a line to the server's log: the event, the connection's name, then the detail.
    case log(LogLine)
    /// Gather the server's status from every loop and answer this request with it (`statusAnswered` after).
    case status(requestID: UInt32)
    /// Read kept versions or the trash from the store and answer this request (`versionsRead` after).
    case readVersions(requestID: UInt32, VersionRead)
}

/// A read of the store's kept versions or trash (version 3).
enum VersionRead {
    case history(id: UUID, limit: Int, before: UInt64?)
    case trash(limit: Int, before: UInt64?)
}

/// A log line about one connection, which the connection writes with its name between the two parts.
struct LogLine {
    /// The text form's first words.
    var event: String
    var detail: String
    /// The event name of the structured form, its level and its fields after the connection's.
    var name: String
    var level: LogLevel
    var fields: [(String, String)]
}

/// One connection's protocol state, with no socket: frames in, actions out (the connection carries them out).
/// Confined to its connection's event loop.
struct ServerSession {
    let limits: ServerLimits
    let role: Role
    let serverName: String
    /// Who this connection's writes are by: its certificate's common name and serial.
    let author: Author
    /// Writes waiting for the store, by request id (kept to name a refused write in the log).
    /// What each write in flight is (kind and memo id), for the log line if it is refused: not the whole operation,
    /// whose content would be copied in and released again for every write. Not a `Dictionary`: see
    /// `RequestIDTable`.
    private(set) var pendingWrites = RequestIDTable<WriteTarget>()
    /// `list` answers queued but not yet sent in full: each holds a snapshot of every memo until it is.
    private(set) var pendingLists = 0
    /// `status` requests being gathered from the loops: counted in flight, so that a flood of them is bounded.
    private(set) var pendingStatus = 0
    /// `history` and `trash` reads the store has not answered yet: counted in flight too.
    private(set) var pendingVersionReads = 0
    /// How the request being handled ended, for the loop's counters (set by `answer` and `fail`); nil when its
    /// answer comes later (a write the store answers, a status the loops answer), which is counted then.
    private var handledResult: RequestResult? = .ok
    /// Open subscriptions, by the request id of their `subscribe`.
    private(set) var subscriptions = Set<UInt32>()
    private(set) var clientName = ""
    /// The protocol version agreed in `hello`: messages of a later version are unknown on this connection.
    private(set) var version = WireProtocol.minimumVersion
    /// Whole frames taken so far (a connection restarts its frame deadline when this moves).
    private(set) var framesReceived = 0
    /// What the answers made by the current `receive` add up to (its `outputBudget` bounds it), counted as each
    /// answer is made (`queue`): counted afterwards from the actions, each action was copied and destroyed again
    /// (a retain and a release of its payload per request).
    private var answerBytes = 0
    /// The current `receive` made a `.close` action: it takes no frame after it. A flag, not a look at the last
    /// action, which copied that action (a get's memo) once per request.
    private var closing = false

    init(limits: ServerLimits, role: Role, serverName: String = "memo-server", author: Author = .none) {
        self.limits = limits
        self.role = role
        self.serverName = serverName
        self.author = author
    }

    /// Takes the whole frames buffered in `frames` (the connection's transport decodes them) and returns what to
    /// do, in order, counting each request that is answered now (not the writes: `completed` counts those) in
    /// `counters`, the loop's. Stops at the first action that closes; the connection's machine then stops
    /// reading, so no frame is taken after it.
    ///
    /// - Parameters:
    ///   - awaitingHello: the connection's machine is still waiting for hello (the first frame must be it);
    ///     `.helloAccepted` says when it came.
    ///   - outputBudget: stop taking frames once the answers made add up to this many bytes; the frames after
    ///     stay buffered (`FrameDecoder.hasWholeFrame`) until the next call. This is how a connection whose peer
    ///     does not read stops answering: one small request can ask for a large answer, so counting requests is
    ///     not enough.
    mutating func receive(
        from frames: inout FrameDecoder, awaitingHello: Bool, store: some ServingStore, outputBudget: Int = .max,
        counters: inout LoopCounters
    ) -> [SessionAction] {
        var awaitingHello = awaitingHello
        var actions: [SessionAction] = []
        // A pipelining client sends requests 16 deep or so: one allocation for them, not five as the array grows.
        if frames.hasWholeFrame { actions.reserveCapacity(16) }
        answerBytes = 0
        closing = false
        while answerBytes < outputBudget {
            let type: UInt8
            let requestID: UInt32
            var payload: WireReader
            do throws(WireError) {
                // The payload is decoded where it lies in the decoder's buffer, not copied out first.
                guard let next = try frames.nextPayload() else { break }
                (type, requestID, payload) = next
                framesReceived += 1
            } catch {
                counters.count(.other, .refused)
                fail(&actions, requestID: 0, code: error.code, error.description)
                break
            }
            handledResult = .ok
            handle(
                type: type, requestID: requestID, payload: &payload, awaitingHello: &awaitingHello, store: store,
                into: &actions)
            if let result = handledResult { counters.count(RequestKind(type: type), result) }
            if closing { break }
        }
        return actions
    }

    private mutating func handle(
        type: UInt8, requestID id: UInt32, payload: inout WireReader, awaitingHello: inout Bool,
        store: some ServingStore, into actions: inout [SessionAction]
    ) {
        let message: Message
        do throws(WireError) {
            message = try Message(type: type, payload: &payload, version: version)
        } catch {
            fail(&actions, requestID: id, code: error.code, error.description)
            return
        }
        if awaitingHello {
            guard case .hello(let minVersion, let maxVersion, let client) = message else {
                fail(&actions, requestID: id, code: .helloRequired, "the first request must be hello")
                return
            }
            let newest = limits.protocolVersion
            guard minVersion <= newest, WireProtocol.minimumVersion <= maxVersion, minVersion <= maxVersion else {
                fail(&actions, requestID: id, code: .unsupportedVersion,
                     "this server speaks protocol versions \(WireProtocol.minimumVersion) to \(newest); "
                        + "the client speaks \(minVersion) to \(maxVersion)")
                return
            }
            clientName = String(client.prefix(128))
            awaitingHello = false
            version = min(maxVersion, newest)
            actions.append(.helloAccepted)
            queue(&actions, .send(Message.welcome(
                version: version, revision: store.revision, maxFrameSize: UInt32(limits.maxFrameSize),
                role: role, server: serverName).frame(requestID: id)))
            return
        }
        if message.minimumVersion > version {
            // What a server of the agreed version would answer: it knows no such type.
            fail(&actions, requestID: id, code: .unknownMessageType,
                 "message type \(type) is not in protocol version \(version), which this connection agreed")
            return
        }
        if pendingWrites.contains(id) || subscriptions.contains(id) {
            fail(&actions, requestID: id, code: .duplicateRequestID, "request id \(id) is still in use")
            return
        }
        switch message {
        case .get, .list, .listPage, .subscribe, .history, .trash:
            // A store that fell behind its shared database answers no read from state it knows may be stale.
            if case .notReady(let reason) = store.readiness {
                answer(&actions, id, .error(code: .storageUnavailable, message: Self.notServing(reason)))
                return
            }
        default:
            break
        }
        // Consumed: a create's content moves into its write, where a borrowed match copied it (a retain, and a
        // release when the message went).
        switch consume message {
        case .hello:
            answer(&actions, id, .error(code: .invalidRequest, message: "hello was already done"))
        case .get(let memoID):
            do throws(MemoError) {
                // The same bytes as `answer(&actions, id, .memo(memo))` would queue, without the array between.
                queue(&actions, .sendMemo(requestID: id, try store.memo(memoID)))
            } catch {
                answer(&actions, id, .error(code: ErrorCode(error), message: error.description))
            }
        case .list:
            guard admitInFlight(&actions, id) else { return }
            pendingLists += 1
            let (revision, memos) = store.snapshot()
            queue(&actions, .sendList(requestID: id, revision: revision, memos: memos))
        case .listPage(let limit, let after):
            // Counted as a list: the answer is queued until sent in full.
            guard admitInFlight(&actions, id) else { return }
            pendingLists += 1
            queue(&actions, .sendPage(requestID: id, store.page(after: after, limit: Int(limit))))
        case .create(let memoID, let insert, let update, let content):
            write(&actions, id, .create(id: memoID ?? UUID.random(), content: content, insertMicros: insert,
                                        updateMicros: update, author: author))
        case .update(let memoID, let expected, let content, let merge):
            write(&actions, id, .update(id: memoID, content: content, expectedRevision: expected, merge: merge,
                                        author: author))
        case .delete(let memoID, let expected):
            write(&actions, id, .delete(id: memoID, expectedRevision: expected, author: author))
        case .restore(let memoID, let revision, let expected):
            write(&actions, id, .restore(id: memoID, revision: revision, expectedRevision: expected, author: author))
        case .history(let memoID, let limit, let before):
            guard limit > 0 else {
                answer(&actions, id, .error(code: .invalidRequest, message: "a history limit must be at least 1"))
                return
            }
            guard admitInFlight(&actions, id) else { return }
            pendingVersionReads += 1
            handledResult = nil
            actions.append(.readVersions(
                requestID: id,
                .history(id: memoID, limit: Int(min(limit, WireProtocol.maxVersionsPage)), before: before)))
        case .trash(let limit, let before):
            guard limit > 0 else {
                answer(&actions, id, .error(code: .invalidRequest, message: "a trash limit must be at least 1"))
                return
            }
            guard admitInFlight(&actions, id) else { return }
            pendingVersionReads += 1
            handledResult = nil
            actions.append(.readVersions(
                requestID: id, .trash(limit: Int(min(limit, WireProtocol.maxVersionsPage)), before: before)))
        case .subscribe(let after):
            guard subscriptions.count < limits.maxSubscriptions else {
                answer(&actions, id, .error(code: .invalidRequest,
                                            message: "at most \(limits.maxSubscriptions) subscriptions per connection"))
                return
            }
            guard admitInFlight(&actions, id) else { return }
            subscriptions.insert(id)
            actions.append(.subscribe(requestID: id, start: after.map { .after($0) } ?? .snapshot))
        case .unsubscribe(let subscription):
            guard subscriptions.remove(subscription) != nil else {
                answer(&actions, id, .error(code: .unknownSubscription, message: "no subscription \(subscription)"))
                return
            }
            actions.append(.unsubscribe(requestID: subscription))
            answer(&actions, id, .ok)
        case .ping(let nonce):
            answer(&actions, id, .pong(nonce: nonce))
        case .status:
            guard admitInFlight(&actions, id) else { return }
            pendingStatus += 1
            handledResult = nil
            actions.append(.status(requestID: id))
        case .pong:
            // The server sends no ping in version 1: a pong answers nothing and gets no answer.
            break
        case .error(let code, let text):
            // A client reporting a problem: logged, not answered (an error answering an error could loop).
            actions.append(.log(LogLine(
                event: "client error", detail: "request=\(id) \(code): \(text)", name: "client_error", level: .warn,
                fields: [("request", "\(id)"), ("code", "\(code.rawValue)"), ("reason", text)])))
        case .welcome, .memo, .memos, .page, .ok, .snapshot, .subscribed, .change, .historyGone, .statusReport,
             .versions, .trashPage:
            // Well-formed but not a request: 203 like any request that makes no sense; the connection stays open.
            // The message's kind is its type's (the message was consumed above; a type without one fails to decode).
            let kind = Message.Kind(rawValue: type)!
            answer(&actions, id, .error(code: .invalidRequest, message: "\(kind) is not a request"))
        case .goingAway:
            closing = true
            actions.append(.close(reason: "client is going away"))
        }
    }

    /// The size of the `memo` frame of `memo` as protocol `version` writes it (the author from version 3).
    static func memoFrameSize(_ memo: Memo, version: UInt16) -> Int {
        WireProtocol.headerSize + Message.memoSize(memo, authors: version >= WireProtocol.authorsVersion)
    }

    /// The answer to a read while the store cannot serve.
    static func notServing(_ reason: String) -> String {
        "this server fell behind its database and is reloading (\(reason)): read from another server, or again "
            + "shortly"
    }

    /// `op` is consumed: it moves into the `.submit` action rather than being copied there (a `WriteOp` copy goes
    /// through its value witness and retains its strings: ~170 instructions per create, BENCHMARKS.md).
    private mutating func write(_ actions: inout [SessionAction], _ id: UInt32, _ op: consuming WriteOp) {
        let target = WriteTarget(of: op)
        guard role == .readWrite else {
            let error = MemoError.permissionDenied("this client's certificate is read-only")
            actions.append(.log(Self.refusal(requestID: id, target, error)))
            answer(&actions, id, .error(code: ErrorCode(error), message: "this client's certificate is read-only"))
            return
        }
        do throws(MemoError) {
            try op.validateArguments()
        } catch {
            actions.append(.log(Self.refusal(requestID: id, target, error)))
            answer(&actions, id, .error(code: ErrorCode(error), message: error.description))
            return
        }
        guard admitInFlight(&actions, id) else { return }
        pendingWrites.insert(id, target)
        handledResult = nil
        actions.append(.submit(requestID: id, op: op))
    }

    private mutating func admitInFlight(_ actions: inout [SessionAction], _ id: UInt32) -> Bool {
        guard pendingWrites.count + subscriptions.count + pendingLists + pendingStatus + pendingVersionReads
                < limits.maxInFlight
        else {
            fail(&actions, requestID: id, code: .tooManyInFlight,
                 "more than \(limits.maxInFlight) requests in flight; read the answers before sending more")
            return false
        }
        return true
    }

    /// A write finished: the message that answers it, and for a refused or failed write the line to log.
    mutating func completed(
        requestID: UInt32, _ result: Result<WriteOutcome, MemoError>
    ) -> (answer: Message, log: LogLine?) {
        var counters = LoopCounters()
        return completed(requestID: requestID, result, counters: &counters)
    }

    /// `completed`, counting the write in `counters` (the loop's) by its kind and result.
    @inline(__always)
    mutating func completed(
        requestID: UInt32, _ result: Result<WriteOutcome, MemoError>, counters: inout LoopCounters
    ) -> (answer: Message, log: LogLine?) {
        let op = pendingWrites.removeValue(forKey: requestID)
        let kind = op?.kind ?? .other
        switch result {
        case .success(let outcome):
            counters.count(kind, .ok)
            counters.writes &+= 1
            return (.memo(outcome.memo), nil)
        case .failure(let error):
            let code = ErrorCode(error)
            counters.count(kind, RequestResult(code: code))
            let answer = Message.error(code: code, message: error.description)
            return (answer, op.map { Self.refusal(requestID: requestID, $0, error) })
        }
    }

    /// A write succeeded: counts it as `completed` does for a success, whose answer is the outcome's memo. The
    /// connection encodes that memo straight into its queue (`OutboundQueue.append(memo:requestID:)`) rather than
    /// through a `Message` made and destroyed per answer.
    mutating func succeeded(requestID: UInt32, counters: inout LoopCounters) {
        let kind = pendingWrites.removeValue(forKey: requestID)?.kind ?? .other
        counters.count(kind, .ok)
        counters.writes &+= 1
    }

    /// A `status` request was answered.
    mutating func statusAnswered(counters: inout LoopCounters) {
        pendingStatus -= 1
        counters.count(.status, .ok)
    }

    /// A `history` or `trash` read finished: the message that answers it.
    mutating func versionsRead(_ result: Result<Message, MemoError>, counters: inout LoopCounters) -> Message {
        pendingVersionReads -= 1
        switch result {
        case .success(let message):
            counters.count(.other, .ok)
            return message
        case .failure(let error):
            let code = ErrorCode(error)
            counters.count(.other, RequestResult(code: code))
            return .error(code: code, message: error.description)
        }
    }

    /// The log line of a write the store refused or failed: `refused` when the request was at fault,
    /// `storage error` when the store was.
    static func refusal(requestID: UInt32, _ target: WriteTarget, _ error: MemoError) -> LogLine {
        let what = "\(target.verb) id=\(target.id.lowercasedString)"
        let code = ErrorCode(error)
        let storage = code.rawValue >= 500
        return LogLine(
            event: storage ? "storage error" : "refused", detail: "request=\(requestID) \(what): \(code): \(error)",
            name: storage ? "storage_error" : "refused", level: storage ? .error : .info,
            fields: [
                ("request", "\(requestID)"), ("op", "\(target.verb)"), ("id", target.id.lowercasedString),
                ("code", "\(code.rawValue)"), ("reason", "\(error)"),
            ])
    }

    /// `count` list answers were sent in full.
    mutating func listsSent(_ count: Int) {
        pendingLists -= count
    }

    /// A subscription ended from the server's side (history gone).
    mutating func subscriptionEnded(_ requestID: UInt32) {
        subscriptions.remove(requestID)
    }

    /// Whether writes are still waiting for the store (a closing connection waits for them).
    var hasPendingWrites: Bool { !pendingWrites.isEmpty }

    private mutating func answer(_ actions: inout [SessionAction], _ id: UInt32, _ message: Message) {
        if case .error(let code, _) = message { handledResult = RequestResult(code: code) }
        queue(&actions, .send(message.frame(requestID: id, version: version)))
    }

    /// Appends an answer to `actions`, adding what it costs to `answerBytes`: its bytes with what holding them
    /// costs until the connection queues them (the array's header, the allocator's overhead, the action), since a
    /// flood of pings is many small answers; a list or a page by its memos.
    private mutating func queue(_ actions: inout [SessionAction], _ action: consuming SessionAction) {
        switch action {
        case .send(let bytes): answerBytes += bytes.count + 64
        case .sendMemo(_, let memo): answerBytes += Self.memoFrameSize(memo, version: version) + 64
        case .sendList(_, _, let memos):
            answerBytes += memos.reduce(0) { $0 + Message.memoFixedSize + $1.content.utf8.count }
        case .sendPage(_, let page):
            answerBytes += page.memos.reduce(0) { $0 + Message.memoFixedSize + $1.content.utf8.count }
        default: break
        }
        actions.append(action)
    }

    private mutating func fail(_ actions: inout [SessionAction], requestID: UInt32, code: ErrorCode, _ text: String) {
        handledResult = RequestResult(code: code)
        queue(&actions, .send(Message.error(code: code, message: text).frame(requestID: requestID)))
        closing = true
        actions.append(.close(reason: "\(code.name): \(text)"))
    }
}

/// The kind of a write and the memo it names: what a refusal's log line says about it.
struct WriteTarget {
    let kind: RequestKind
    let id: UUID

    var verb: StaticString {
        switch kind {
        case .update: return "update"
        case .delete: return "delete"
        case .restore: return "restore"
        default: return "create"
        }
    }

    /// Borrows `op` (an initialiser's argument is passed owned: `init(_ op: WriteOp)` copied the whole op to read
    /// its id and kind, and destroyed the copy).
    init(of op: borrowing WriteOp) {
        (kind, id) = (op.requestKind, op.id)
    }
}

extension WriteOp {
    /// The kind the loop's counters and the refusal's log line give this write.
    fileprivate var requestKind: RequestKind {
        switch self {
        case .create: .create
        case .update: .update
        case .restore: .restore
        case .delete: .delete
        }
    }
}
