import Foundation
import MemoModel
import MemoNet
import MemoTLS
import MemoWire

/// A connection to a memo server over mutual TLS: the version handshake, pipelined requests with ids and
/// deadlines, subscriptions, and reconnecting with backoff when the connection is lost or the server goes away.
///
/// One event loop thread per client drives the socket and the TLS engine (its own, or a loop the caller lends);
/// the async methods hop onto it.
public final class MemoConnection: Sendable {
    public let configuration: ClientConfiguration
    /// Where the connection stands; replays the current state to new subscribers.
    public let connectionState: Subject<ConnectionState>
    /// Connection attempts made since the connection was last live (0 while live); replays.
    public let connectionAttempts: Subject<Int>
    /// Why the last attempt failed or the connection was lost, as the error a request would get (its
    /// description is one line for a status bar); nil once live again. Replays.
    public let connectionFailure: Subject<ClientError?>
    /// The role the server's last welcome gave our certificate; nil before the first welcome. Replays.
    public let role: Subject<Role?>
    private let loop: EventLoop
    /// False when the caller lent the loop (`connect(_:on:)`): it is not ours to stop.
    private let ownsLoop: Bool
    private let core: ConnectionOwner

    private init(configuration: ClientConfiguration, loop lent: EventLoop? = nil) throws {
        self.configuration = configuration
        var tlsConfiguration = TLSConfiguration.client(
            trustedCAPath: configuration.caPath, certificateChainPath: configuration.certificatePath,
            privateKeyPath: configuration.keyPath)
        // A client that saves sessions keeps OpenSSL's records: the server's ticket comes after the handshake,
        // and only OpenSSL can turn it into a session (a handed-off client drops it).
        tlsConfiguration.recordLayer = configuration.tlsSessionCache == nil ? configuration.tlsRecords : .openSSL
        // With a saved session for the first server the certificate, key and CA are read only if the handshake
        // turns out to be a full one (a resumed one needs none of them). Without one the handshake will be full:
        // everything is loaded now, so that a file that does not parse fails here, as it always has.
        if let folder = configuration.tlsSessionCache, let first = configuration.servers.first {
            tlsConfiguration.deferClientMaterial = TLSSessionCache(directory: folder).hasSession(
                server: first, configuration: tlsConfiguration)
        }
        let tls = try TLSContext(tlsConfiguration)
        connectionState = Subject(ConnectionState.connecting)
        connectionAttempts = Subject(0)
        connectionFailure = Subject(nil)
        role = Subject(nil)
        if let lent {
            loop = lent
            ownsLoop = false
        } else {
            loop = try EventLoop.start(name: "memo-client")
            ownsLoop = true
        }
        core = ConnectionOwner(
            loop: loop, configuration: configuration, tls: tls, state: connectionState, attempts: connectionAttempts)
        let core = self.core
        let failure = connectionFailure
        let role = self.role
        loop.execute {
            core.onWelcome = { welcome in
                core.lastWelcomeRevision = welcome.revision
                if role.value != welcome.role { role.send(welcome.role) }
            }
            core.onFailure = { end in failure.send(end.map { Self.error(for: $0, configuration: configuration) }) }
        }
    }

    /// The store's revision when the server last welcomed us; nil before the first welcome.
    /// Read on the client's loop (waiting for its current event when called from elsewhere).
    public var serverRevision: UInt64? {
        let core = self.core
        return loop.runAndWait { core.lastWelcomeRevision }
    }

    deinit {
        let core = self.core
        loop.execute { core.close() }
        if ownsLoop { loop.shutdownGracefully() }
    }

    /// Connects and waits for the server's welcome.
    /// A server that cannot be reached yet (connection refused, still starting) is tried again with backoff until
    /// `connectTimeout`; TLS and certificate failures are thrown at once.
    /// - Throws: `ClientError` (`tlsRefused`, `unreachable`, `timedOut`, `server`) when the first connection
    ///   fails, or `TLSError` when the certificate files cannot be loaded. Once connected, a lost connection is
    ///   made again in the background.
    /// - Parameter loop: the event loop to run on, lent by the caller and left running (nil: a loop thread of the
    ///   connection's own, stopped and joined when it goes). memo-client lends its main thread's loop to a
    ///   one-request command, whose task runs on that loop too (BENCHMARKS.md, "A script's command").
    public static func connect(_ configuration: ClientConfiguration, on loop: EventLoop? = nil) async throws
        -> MemoConnection
    {
        let client = try MemoConnection(configuration: configuration, loop: loop)
        if let end = await client.firstOutcome() { throw client.error(for: end) }
        return client
    }

    /// Starts the first connection, within `connectTimeout`, and waits for its outcome: nil once welcomed, else how
    /// it ended. `beforeStart` runs on the loop just before, so that a request it submits goes out behind `hello`.
    private func firstOutcome(beforeStart: @escaping @Sendable (ConnectionOwner) -> Void = { _ in }) async
        -> ConnectionEnd?
    {
        let core = self.core
        let deadline = ContinuousClock.now + configuration.connectTimeout
        return await withCheckedContinuation { continuation in
            loop.execute {
                beforeStart(core)
                core.start(firstDeadline: deadline) { continuation.resume(returning: $0) }
            }
        }
    }

    /// Connects as `connect(_:on:)` does, with a create of `content` under `id` sent right behind `hello`, before
    /// the welcome comes (PROTOCOL.md lets requests be pipelined; the server answers them in order after the
    /// welcome): a script's `memo-client add` saves a round trip so. The create's answer is decoded by the
    /// version the welcome agreed, which comes before it.
    ///
    /// The connection's failures are thrown as `connect` throws them (a refused hello, TLS or the certificate
    /// refused: the server did nothing behind the refusal, so the create is known not done), except that a
    /// connection that ended after the create went out and before any answer throws
    /// `MemoError.outcomeUnknown`: the server may have done it.
    /// - Parameter timeout: the create's deadline, counted from now (connecting included).
    /// - Returns: the connection, and the create's answer to wait for (`CreateBehindHello.memo()`).
    public static func connect(
        _ configuration: ClientConfiguration, on loop: EventLoop? = nil, creating content: String, id: UUID,
        timeout: Duration
    ) async throws -> (MemoConnection, CreateBehindHello) {
        try MemoLimits.validate(content: content)
        let client = try MemoConnection(configuration: configuration, loop: loop)
        let created = CreateBehindHello(loop: client.loop)
        let message = Message.create(id: id, insertMicros: nil, updateMicros: nil, content: content)
        // Submitted first: the hello the start sends takes it along.
        let end = await client.firstOutcome { core in
            core.send(message, timeout: timeout, behindHello: true) { result, _ in created.answered(result) }
        }
        if let end {
            // The first outcome closes the client, which settles the create in the same loop turn.
            if case .failure(let error)? = client.loop.runAndWait({ created.result }),
               let memoError = error as? MemoError, case .outcomeUnknown = memoError {
                throw memoError
            }
            throw client.error(for: end)
        }
        return (client, created)
    }

    /// The answer to the create `connect(_:on:creating:id:timeout:)` sent behind hello.
    /// `@unchecked Sendable`: its state is read and written only on the client's loop.
    public final class CreateBehindHello: @unchecked Sendable {
        private let loop: EventLoop
        fileprivate var result: Result<Memo, any Error>?
        private var waiter: CheckedContinuation<Result<Memo, any Error>, Never>?

        fileprivate init(loop: EventLoop) {
            self.loop = loop
        }

        /// On the loop: the request's outcome.
        fileprivate func answered(_ reply: Result<Reply, any Error>) {
            let result = reply.flatMap { reply -> Result<Memo, any Error> in
                guard case .message(.memo(let memo)) = reply else {
                    return .failure(ClientError.protocolError("expected a memo in answer to create, got \(reply)"))
                }
                return .success(memo)
            }
            self.result = result
            waiter?.resume(returning: result)
            waiter = nil
        }

        /// The memo created (or the create's failure: `MemoError.outcomeUnknown` when it was sent and no answer
        /// came; sending it again with the same id is safe).
        public func memo() async throws -> Memo {
            try await withCheckedContinuation { continuation in
                loop.execute { [self] in
                    if let result { continuation.resume(returning: result) } else { waiter = continuation }
                }
            }.get()
        }
    }

    /// Starts connecting in the background and returns at once (for a front end that shows a cached mirror
    /// while the server is away). Requests made before the connection is up wait for it, up to their deadline.
    /// - Throws: `TLSError` when the certificate files cannot be loaded.
    public static func start(_ configuration: ClientConfiguration) throws -> MemoConnection {
        let client = try MemoConnection(configuration: configuration)
        let core = client.core
        client.loop.execute { core.start() }
        return client
    }

    /// Closes the connection; pending requests fail with `ClientError.closed`. Safe to call more than once.
    public func close() {
        let core = self.core
        loop.execute { core.close() }
    }

    func error(for end: ConnectionEnd) -> ClientError {
        Self.error(for: end, configuration: configuration)
    }

    static func error(for end: ConnectionEnd, configuration: ClientConfiguration) -> ClientError {
        switch end {
        case .unreachable(let reason), .unresolved(let reason):
            return .unreachable(server: configuration.server, reason: reason)
        case .timedOut: return .timedOut(server: configuration.server, seconds: configuration.connectTimeout.seconds)
        case .tlsRefused(let error): return .tlsRefused(server: configuration.server, error)
        case .rejected(let code, let message): return .server(code: code, message: message)
        case .lost(let reason): return .unreachable(server: configuration.server, reason: reason)
        // A ping unanswered is a request unanswered: the status bar reads it as "server not answering".
        case .notAnswering(let seconds): return .timedOut(server: configuration.server, seconds: seconds)
        case .closedByClient: return .closed
        }
    }

    // MARK: - Requests

    /// Sends one request and waits for its answer (resending it on the next connection if this one is lost).
    func send(_ message: Message, timeout: Duration? = nil) async throws -> Reply {
        try await sendCounting(message, timeout: timeout).0.get()
    }

    /// `send`, also saying how many times the request went out (more than once: an earlier answer was lost).
    func sendCounting(_ message: Message, timeout: Duration? = nil) async -> (Result<Reply, any Error>, Int) {
        let core = self.core
        return await withCheckedContinuation { continuation in
            loop.execute {
                core.send(message, timeout: timeout) { result, attempts in
                    continuation.resume(returning: (result, attempts))
                }
            }
        }
    }

    /// Sends a request whose answer is one memo.
    func memoRequest(_ message: Message, timeout: Duration? = nil) async throws -> Memo {
        try await memoRequestCounting(message, timeout: timeout).0.get()
    }

    func memoRequestCounting(_ message: Message, timeout: Duration? = nil) async -> (Result<Memo, any Error>, Int) {
        let (result, attempts) = await sendCounting(message, timeout: timeout)
        return (result.flatMap { reply in
            guard case .message(.memo(let memo)) = reply else {
                return .failure(ClientError.protocolError("expected a memo in answer to \(message.kind), got \(reply)"))
            }
            return .success(memo)
        }, attempts)
    }

    /// Creates a memo. The id is chosen here when not given, so a create resent after a lost answer finds the
    /// memo the first try made instead of making a second one.
    public func create(content: String, id: UUID? = nil, insertDate: Date? = nil) async throws -> Memo {
        try await create(content: content, id: id ?? UUID.random(), insertMicros: insertDate?.unixMicros)
    }

    /// Creates a memo with this id and, for an import, these dates (microseconds since the epoch).
    /// - Parameter timeout: the request's deadline (default: the configuration's).
    /// - Throws: `MemoError.contentTooLarge` before anything is sent when the content is over the limit;
    ///   `MemoError.outcomeUnknown` when it was sent and no answer came (or the server says so, 505): sending it
    ///   again with the same id is safe.
    public func create(
        content: String, id: UUID, insertMicros: Int64?, updateMicros: Int64? = nil, timeout: Duration? = nil
    ) async throws -> Memo {
        try MemoLimits.validate(content: content)
        return try await memoRequest(
            .create(id: id, insertMicros: insertMicros, updateMicros: updateMicros, content: content),
            timeout: timeout)
    }

    public func get(id: UUID, timeout: Duration? = nil) async throws -> Memo {
        try await memoRequest(.get(id: id), timeout: timeout)
    }

    /// Every memo, newest first, and the revision the list is at.
    public func list() async throws -> (revision: UInt64, memos: [Memo]) {
        let reply = try await send(.list)
        guard case .list(let revision, let memos) = reply else {
            throw ClientError.protocolError("expected memos in answer to list, got \(reply)")
        }
        return (revision, memos)
    }

    /// At most `limit` memos (0: no limit) listed after `cursor` (from the newest when nil), newest first, and
    /// whether more follow: one page, served by the server from its ordered table.
    /// - Throws: `ServerTooOldError` (nothing sent) when the server speaks only protocol version 1.
    public func listPage(limit: UInt32, after cursor: ListCursor?) async throws -> ListPage {
        let reply = try await send(.listPage(limit: limit, after: cursor))
        guard case .page(let page) = reply else {
            throw ClientError.protocolError("expected a page in answer to list-page, got \(reply)")
        }
        return page
    }

    /// Replaces a memo's content; with `expectedRevision`, only if the memo is still at it.
    ///
    /// When the first try's answer was lost and the resent update meets a conflict, the memo is read back: if it
    /// holds our content, the first try did it and that is the answer.
    /// - Parameter merge: when the memo moved on from `expectedRevision`, let the server merge this content with
    ///   the lines changed since, line by line against that version (protocol 3's merge flag; an older server
    ///   does not merge): overlapping or adjacent edits, or that version no longer kept, are still the conflict.
    /// - Throws: `MemoError.outcomeUnknown` when it was sent and no answer came (or the server says so, 505).
    public func update(
        id: UUID, content: String, expectedRevision: UInt64? = nil, merge: Bool = false, timeout: Duration? = nil
    ) async throws -> Memo {
        try MemoLimits.validate(content: content)
        let (result, attempts) = await memoRequestCounting(
            .update(id: id, expectedRevision: expectedRevision, content: content, merge: merge), timeout: timeout)
        // A read that fails leaves the conflict as the answer: nothing is lost, the caller hears the refusal.
        if attempts > 1, case .failure(MemoError.conflict) = result,
           let memo = try? await get(id: id, timeout: timeout), memo.content.hasSameBytes(as: content) {
            return memo
        }
        return try result.get()
    }

    /// Deletes a memo; with `expectedRevision`, only if the memo is still at it. Returns it as it was.
    /// - Parameter known: the memo as the caller last saw it; when the first try's answer was lost and the resent
    ///   delete finds nothing, the first try did it, and `known` is the answer.
    /// - Throws: `MemoError.outcomeUnknown` when it was sent and no answer came (or the server says so, 505).
    public func delete(
        id: UUID, expectedRevision: UInt64? = nil, known: Memo? = nil, timeout: Duration? = nil
    ) async throws -> Memo {
        let (result, attempts) = await memoRequestCounting(
            .delete(id: id, expectedRevision: expectedRevision), timeout: timeout)
        if attempts > 1, case .failure(MemoError.notFound) = result, let known {
            return known
        }
        return try result.get()
    }

    /// At most `limit` versions of memo `id`, newest first, older than revision `before` when given: one round
    /// trip (protocol version 3).
    /// - Throws: `MemoError.notFound` for an id the server knows nothing of; `ServerTooOldError` (nothing sent)
    ///   when the server speaks an older version.
    public func history(id: UUID, limit: UInt32, before: UInt64? = nil) async throws -> VersionPage {
        let reply = try await send(.history(id: id, limit: limit, before: before))
        guard case .message(.versions(_, let more, let versions)) = reply else {
            throw ClientError.protocolError("expected versions in answer to history, got \(reply)")
        }
        return VersionPage(versions: versions, more: more)
    }

    /// At most `limit` deleted memos, newest delete first, deleted before revision `before` when given
    /// (protocol version 3).
    public func trash(limit: UInt32, before: UInt64? = nil) async throws -> TrashPage {
        let reply = try await send(.trash(limit: limit, before: before))
        guard case .message(.trashPage(let more, let entries)) = reply else {
            throw ClientError.protocolError("expected a trash page in answer to trash, got \(reply)")
        }
        return TrashPage(entries: entries, more: more)
    }

    /// Restores version `revision` of a live memo, or brings a memo back from the trash (its last content, or
    /// version `revision`'s), guarded by `expectedRevision` (protocol version 3). A write: its author is this
    /// client's certificate.
    /// - Throws: `MemoError.versionNotFound` (a version not kept, a memo not in the trash) with the server's
    ///   reason, `conflict`, `invalidArgument` (a live memo without `revision`), `permissionDenied`,
    ///   `outcomeUnknown`.
    public func restore(
        id: UUID, revision: UInt64?, expectedRevision: UInt64? = nil, timeout: Duration? = nil
    ) async throws -> Memo {
        try await memoRequest(.restore(id: id, revision: revision, expectedRevision: expectedRevision),
                              timeout: timeout)
    }

    /// Round trip to the server.
    public func ping() async throws -> Duration {
        let start = ContinuousClock.now
        let nonce = UInt64.random(in: 0...UInt64.max)
        let reply = try await send(.ping(nonce: nonce))
        guard case .message(.pong(nonce)) = reply else { throw ClientError.protocolError("bad pong") }
        return ContinuousClock.now - start
    }

    /// How the server is doing (the `status` request).
    public func status() async throws -> StatusReport {
        let reply = try await send(.status)
        guard case .message(.statusReport(let report)) = reply else {
            throw ClientError.protocolError("expected a status report in answer to status, got \(reply)")
        }
        return report
    }

    /// Runs `work` on the client's loop thread, after everything queued there before it.
    func execute(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    /// Runs `work` on the client's loop thread and waits for its result; at once when already on it.
    func runAndWait<Result>(_ work: @escaping () -> Result) -> Result {
        loop.runAndWait(work)
    }

    // MARK: - Subscriptions

    /// A subscription that lasts across connections.
    public final class SubscriptionHandle: Sendable {
        let token: Int
        private let client: MemoConnection

        init(token: Int, client: MemoConnection) {
            self.token = token
            self.client = client
        }

        /// Starts it again on the server from where `start` now says (after the owner lost track).
        public func restart() {
            let core = client.core
            let token = self.token
            client.loop.execute { core.restart(token) }
        }

        public func cancel() {
            let core = client.core
            let token = self.token
            client.loop.execute { core.unsubscribe(token) }
        }
    }

    /// Subscribes on this and every later connection.
    /// - Parameters:
    ///   - start: asked before each `subscribe` is sent: nil for a snapshot, else the last revision applied.
    ///   - handler: the events of one read, in order, on the client's loop thread; it must not block.
    public func subscribe(
        start: @escaping @Sendable () -> UInt64?, handler: @escaping @Sendable ([SubscriptionEvent]) -> Void
    ) -> SubscriptionHandle {
        let core = self.core
        // The token is handed out by the loop that owns the subscriptions.
        let token = loop.runAndWait { core.subscribe(start: start, handler: handler) }
        return SubscriptionHandle(token: token, client: self)
    }
}
