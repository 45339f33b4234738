import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire
import Synchronization

/// One client: a non-blocking socket, its TLS transport and its protocol session, driven by one event loop.
///
/// Bytes flow socket -> transport (TLS, frames) -> session (frames -> actions) on reads, and outbound queue ->
/// transport -> socket on writes. Everything here runs on the connection's loop; store completions hop back to it.
/// The lifecycle and its policies (which phase, what an event leads to) are `ServerConnectionMachine`'s; this
/// class feeds it events and runs every action it returns (`run`).
///
/// The stored parts are internal, not private, for the extensions in ServerConnection+Writing.swift and
/// ServerConnection+Closing.swift; nothing outside the connection's files touches them.
final class ServerConnection: EventHandler {
    let number: UInt64
    let peer: SocketAddress
    let socket: TCPSocket
    var transport: FramedTLSTransport
    /// The transport's engine, held here too: a `let`, so a call on it needs no retain, where one through the
    /// `var transport` would (the transport could be replaced during the call). The hot paths call it per request.
    let tls: TLSEngine
    let server: ServerShared
    let context: LoopBound<LoopContext>
    var loop: EventLoop { context.eventLoop }
    var registration: Registration?
    /// What `registration` is watched for, kept here so that the flush after every delivery, which asks for
    /// `.readable` again, costs no lookup in the loop's registration table.
    var registeredInterest: Interest = .readable
    var session: ServerSession?
    var machine: ServerConnectionMachine
    var phase: ServerConnectionMachine.Phase { machine.phase }
    var outbound = OutboundQueue()
    /// The handshake deadline, then the closing and linger deadlines.
    var deadline: TimerHandle?
    /// Runs while a frame is begun but not whole (see `ServerLimits.frameTimeout`).
    var frameDeadline: TimerHandle?
    var commonName = "-"
    /// The loop's sweep tick of the last read or write; buffers are given back after a tick without any.
    var lastActiveTick: UInt64 = 0
    var buffersHeld = true

    /// The role the client's certificate gives it, once TLS and `hello` are done; nil before.
    var role: Role? { machine.helloDone ? session?.role : nil }

    /// - Parameter rejected: accepted over the connection limit: told so once TLS is up, then closed.
    init(
        number: UInt64, socket: TCPSocket, peer: SocketAddress, tls: TLSEngine, server: ServerShared,
        context: LoopBound<LoopContext>, rejected: Bool
    ) {
        self.number = number
        self.socket = socket
        self.peer = peer
        self.tls = tls
        transport = FramedTLSTransport(tls: tls, maxFrameSize: server.limits.maxFrameSize)
        self.server = server
        self.context = context
        machine = ServerConnectionMachine(limits: server.limits, rejected: rejected)
        #if DEBUG
        server.connectionObjects.add(1, ordering: .relaxed)
        server.sessionsHoldingKeys.add(1, ordering: .relaxed)
        #endif
    }

    #if DEBUG
    /// Whether this connection still counts in `sessionsHoldingKeys`.
    var countedAsHoldingKeys = true

    deinit {
        server.connectionObjects.subtract(1, ordering: .relaxed)
        if countedAsHoldingKeys { server.sessionsHoldingKeys.subtract(1, ordering: .relaxed) }
    }
    #endif

    /// Registers with the loop and starts the handshake deadline. Call on the loop.
    func start() {
        do {
            try? socket.setNoDelay()
            // A client whose host died or whose network was cut is found by the kernel even with our writes
            // queued for it (a stopped client process still acknowledges, and backpressure covers it).
            try? socket.detectDeadPeer()
            registration = try loop.register(socket: socket, interest: .readable, handler: self)
        } catch {
            server.log(
                .error, "close", [("conn", "\(number)"), ("peer", "\(peer)"), ("reason", "cannot register: \(error)")],
                "close conn=\(number) peer=\(peer) reason=\"cannot register: \(error)\"")
            socket.close()
            server.connectionClosed()
            return
        }
        let ctx = context.value
        ctx.connections[ObjectIdentifier(self)] = self
        markActive(ctx)
        schedule(&deadline, after: server.limits.handshakeTimeout) { connection in
            connection.machine.handshakeDeadlinePassed(tlsComplete: connection.tls.isHandshakeComplete)
        }
    }

    // MARK: Reading

    func readable() {
        markActive(context.value)
        run(machine.readable())
    }

    private func readAndAnswer() {
        // At most an eighth of the outbound limit per wake-up (and 256 KiB): what is read is held until answered,
        // so it counts in what one connection can make the server hold.
        let budget = min(256 * 1024, max(16 * 1024, server.limits.maxOutboundBytes / 8))
        let ctx = context.value
        let end: FramedTLSTransport.ReadEnd
        do {
            end = try ctx.readBuffer.withUnsafeMutableBytes { buffer throws(NetError) in
                try transport.read(from: socket, through: buffer, budget: budget)
            }
        } catch {
            abort("read failed: \(error)")
            return
        }
        advanceTransport()
        if end == .endOfFile { run(machine.peerClosed(pendingWrites: session?.hasPendingWrites == true)) }
    }

    /// Runs TLS over what was read: the handshake, then the frames to the session.
    private func advanceTransport() {
        let ctx = context.value
        let inbound = transport.advance(scratch: &ctx.plaintext)
        switch inbound {
        case .handshaking:
            break
        case .handshakeCompleted:
            ctx.counters.handshakes[0] &+= 1
            handshakeCompleted()
            if machine.isServing { advanceTransport() }
            return
        case .delivered(let closeNotify):
            answer()
            if ctx.plaintext.capacity > 256 * 1024 { ctx.plaintext = [] }
            if closeNotify { run(machine.closeNotifyReceived()) }
            checkOutboundLimit()
        case .failed(_, let inHandshake):
            if inHandshake { ctx.counters.handshakes[1] &+= 1 }
            flush()  // the alert, if any, tells the peer why
            abort(inbound.reason ?? "TLS error")
            return
        }
        flush()
    }

    /// Gives the buffered frames to the session and performs what it asks, taking frames only while the answers
    /// fit under the high-water mark; the rest stay buffered, and reading pauses until the peer takes what is
    /// queued.
    private func answer(progress: Bool = false) {
        guard let framesBefore = session?.framesReceived else { return }
        // With `progress` (everything queued was taken) at least one frame is answered, whatever the count says.
        let budget = max(progress ? 1 : 0, highWater - outboundBytes)
        // Mutated in place: a copy sharing storage with `self.session` would copy the session's request sets.
        let actions = session?.receive(
            from: &transport.frames, awaitingHello: machine.awaitingHello, store: server.store,
            outputBudget: budget, counters: &context.value.counters) ?? []
        let progressed = session?.framesReceived != framesBefore
        perform(actions)
        // A peer that sends requests and never reads the answers then holds at most about `highWater` bytes of
        // them, however many it sends.
        run(machine.framesAnswered(
            hasWholeFrame: transport.frames.hasWholeFrame, overHighWater: outboundBytes > highWater,
            bufferedBytes: transport.frames.bufferedByteCount, progressed: progressed))
    }

    /// Answers the frames left buffered by `answer` once the peer has taken everything queued before them.
    private func answerBufferedFrames() {
        guard machine.mayAnswerBufferedFrames else { return }
        answer(progress: true)
        flush()
    }

    /// Above this many bytes held for the peer, reading pauses; well under the slow-consumer limit, so that a peer
    /// that only sends requests is slowed down rather than dropped.
    var highWater: Int { server.limits.maxOutboundBytes / 4 }

    /// Every byte held for the peer: queued frames with their overhead, records TLS has sealed, and ciphertext the
    /// socket has not taken, each counted by the memory it holds.
    var outboundBytes: Int { outbound.heldBytes + tls.outboundRetainedBytes + transport.ciphertextRetainedBytes }

    private func handshakeCompleted() {
        commonName = tls.peerCommonName ?? "-"
        let roleName = tls.peerRole == .readOnly ? "read-only" : "read-write"
        let version = tls.negotiatedProtocol ?? "?"
        logLine(LogLine(
            event: "open", detail: "role=\(roleName) tls=\(version)", name: "open", level: .info,
            fields: [("role", roleName), ("tls", version)]))
        run(machine.tlsEstablished())
    }

    // MARK: Actions

    private func perform(_ actions: [SessionAction]) {
        // Consecutive writes go to the store as one batch, submitted before the next other action, so that
        // actions reach the store in the order they came. (Reads were answered while the session decoded the
        // frames: a read pipelined behind a write may not see it, as PROTOCOL.md says.)
        // The request ids and the operations in two arrays: the store takes the operations as they are, with no
        // copy of a (request id, operation) pair per write.
        var requestIDs: [UInt32] = []
        var ops: [WriteOp] = []
        for action in actions {
            if case .submit(let requestID, let op) = action {
                requestIDs.append(requestID)
                ops.append(op)
                continue
            }
            if !ops.isEmpty {
                submit(requestIDs, ops)
                requestIDs = []
                ops = []
                if phase == .closed { return }
            }
            switch action {
            case .helloAccepted:
                // From here on every frame is the agreed version's (memos with authors from version 3).
                outbound.version = session?.version ?? WireProtocol.minimumVersion
                run(machine.helloAnswered())
            case .send(let bytes):
                enqueue(.frame(bytes))
            case .sendList(let requestID, let revision, let memos):
                enqueue(.stream(ChunkStream(
                    requestID: requestID, revision: revision, memos: memos, snapshot: false,
                    maxFrameSize: server.limits.maxFrameSize, version: outbound.version)))
            case .sendPage(let requestID, let page):
                enqueue(.stream(ChunkStream(
                    requestID: requestID, revision: page.revision, memos: page.memos, snapshot: false,
                    maxFrameSize: server.limits.maxFrameSize, pageMore: page.more, version: outbound.version)))
            case .submit:
                break  // gathered above
            case .subscribe(let requestID, let start):
                subscribe(requestID, start)
            case .unsubscribe(let requestID):
                context.value.unsubscribe(self, requestID: requestID)
            case .close(let reason):
                beginClosing(reason)
            case .log(let line):
                logLine(line)
            case .status(let requestID):
                answerStatus(requestID)
            case .readVersions(let requestID, let read):
                readVersions(requestID, read)
            }
            if phase == .closed { return }
        }
        if !ops.isEmpty { submit(requestIDs, ops) }
    }

    /// Gathers the server's status from every loop, then answers on this one.
    private func answerStatus(_ requestID: UInt32) {
        let bound = LoopBound(self, eventLoop: loop)
        server.gatherStatus { report in
            bound.eventLoop.execute {
                let connection = bound.value
                guard connection.phase != .closed else { return }
                connection.session?.statusAnswered()
                connection.context.value.counters.count(.status, .ok)
                connection.enqueue(.statusReport(report), requestID: requestID)
                connection.flush()
            }
        }
    }

    /// Reads kept versions or the trash from the store (on its own thread), then answers on this loop.
    private func readVersions(_ requestID: UInt32, _ read: VersionRead) {
        let bound = LoopBound(self, eventLoop: loop)
        let maxFrame = server.limits.maxFrameSize
        let answered: @Sendable (Result<Message, MemoError>) -> Void = { result in
            bound.eventLoop.execute {
                let connection = bound.value
                guard connection.phase != .closed, var session = connection.session else { return }
                let message = session.versionsRead(result, counters: &connection.context.value.counters)
                connection.session = session
                connection.enqueue(Self.fitted(message, maxFrameSize: maxFrame), requestID: requestID)
                connection.flush()
            }
        }
        switch read {
        case .history(let id, let limit, let before):
            server.store.history(id: id, limit: limit, before: before) { result in
                answered(result.map { .versions(id: id, more: $0.more, versions: $0.versions) })
            }
        case .trash(let limit, let before):
            server.store.trash(limit: limit, before: before) { result in
                answered(result.map { .trashPage(more: $0.more, entries: $0.entries) })
            }
        }
    }

    /// A `versions` or `trash` answer cut to fit one frame: the oldest entries go (and `more` says they follow).
    static func fitted(_ message: Message, maxFrameSize: Int) -> Message {
        var message = message
        while message.frame(requestID: 0, version: WireProtocol.authorsVersion).count > maxFrameSize {
            switch message {
            case .versions(let id, _, let versions) where versions.count > 1:
                message = .versions(id: id, more: true, versions: Array(versions.dropLast(max(1, versions.count / 4))))
            case .trashPage(_, let entries) where entries.count > 1:
                message = .trashPage(more: true, entries: Array(entries.dropLast(max(1, entries.count / 4))))
            default:
                return message
            }
        }
        return message
    }

    private func submit(_ requestIDs: [UInt32], _ ops: [WriteOp]) {
        // Made per submit, not kept in a property: it holds this connection, which would then never be freed.
        let bound = LoopBound(self, eventLoop: loop)
        // One clock read per batch, not per write, for `memo_request_duration_seconds`.
        let started = monotonicNanos()
        server.store.submit(ops) { results in
            // The memory store answers at once, on this loop: no hop needed.
            if bound.eventLoop.inEventLoop {
                // Answered while the requests are being handled: the flush after this read sends them.
                bound.value.writesCompleted(requestIDs, results, started: started, flush: false)
            } else {
                bound.eventLoop.execute { bound.value.writesCompleted(requestIDs, results, started: started) }
            }
        }
    }

    private func writesCompleted(
        _ requestIDs: [UInt32], _ results: [Result<WriteOutcome, MemoError>], started: UInt64, flush now: Bool = true
    ) {
        let answered = monotonicNanos()
        let ctx = context.value
        // Every write of a batch took the same time: one observation of that many.
        ctx.counters.requestDuration.observe(nanoseconds: answered &- min(answered, started), count: results.count)
        for (requestID, result) in zip(requestIDs, results) {
            guard machine.storeAnswered(),
                let (answer, line) = session?.completed(requestID: requestID, result, counters: &ctx.counters)
            else {
                return
            }
            if let line { logLine(line) }
            enqueue(answer, requestID: requestID)
        }
        if now { flush() }
    }

    private func subscribe(_ requestID: UInt32, _ start: WatchStart) {
        let store = server.store
        // Counted before the snapshot or history is read; see `Broadcaster`.
        context.value.subscribe(self, requestID: requestID, after: UInt64.max)
        switch start {
        case .snapshot:
            let (revision, memos) = store.snapshot()
            context.value.subscribe(self, requestID: requestID, after: revision)
            enqueue(.stream(ChunkStream(
                requestID: requestID, revision: revision, memos: memos, snapshot: true,
                maxFrameSize: server.limits.maxFrameSize, version: outbound.version)))
        case .after(let revision):
            do throws(MemoError) {
                let (head, changes) = try store.changes(after: revision)
                context.value.subscribe(self, requestID: requestID, after: head)
                enqueue(.frame(Message.subscribed(head: head).frame(requestID: requestID)))
                for change in changes { enqueue(.change(change), requestID: requestID) }
            } catch {
                session?.subscriptionEnded(requestID)
                context.value.unsubscribe(self, requestID: requestID)
                if case .historyGone(let requested, let oldest) = error {
                    enqueue(.frame(Message.historyGone(requested: requested, oldestAvailable: oldest)
                        .frame(requestID: requestID)))
                } else {
                    enqueue(.frame(Message.error(code: ErrorCode(error), message: error.description)
                        .frame(requestID: requestID)))
                }
            }
        }
    }

    /// Runs what the machine asked for; every action is handled here.
    func run(_ action: ServerConnectionMachine.Action) {
        switch action {
        case .none:
            break
        case .read:
            readAndAnswer()
        case .discardInput:
            drainWhileClosing()
        case .setInterest(let interest):
            setInterest(interest)
        case .startSession:
            // The author of this connection's writes: its certificate, never anything the client says.
            session = ServerSession(
                limits: server.limits, role: tls.peerRole == .readOnly ? .readOnly : .readWrite,
                serverName: server.serverName,
                author: Author(name: tls.peerCommonName ?? "", serial: tls.peerSerialNumber ?? ""))
            // A handshake begun before a reload was verified against the previous list.
            closeIfRevoked(nil)
        case .cancelHandshakeDeadline:
            deadline?.cancel()
            deadline = nil
        case .armFrameDeadline:
            schedule(&frameDeadline, after: server.limits.frameTimeout) { connection in
                connection.frameDeadline = nil
                let buffered = connection.transport.frames.bufferedByteCount
                return connection.machine.frameDeadlinePassed(bufferedBytes: buffered)
            }
        case .cancelFrameDeadline:
            frameDeadline?.cancel()
            frameDeadline = nil
        case .startClosing:
            startClosing()
        case .sendAndClose(let notice):
            if notice.dropQueued {
                let limit = server.limits.maxOutboundBytes
                server.log(
                    .warn, "slow_consumer",
                    [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName), ("queued_limit", "\(limit)")],
                    "slow consumer conn=\(number) peer=\(peer) cn=\(commonName): over \(limit) bytes queued; dropping "
                        + "them and sending going-away")
                outbound.removeAll()
            }
            let message = notice.goingAway
                ? Message.goingAway(code: notice.code, message: notice.message)
                : Message.error(code: notice.code, message: notice.message)
            if machine.acceptsOutput { outbound.append(.frame(message.frame(requestID: 0))) }
            run(machine.beginClosing(notice.reason))
        case .sendCloseNotify:
            // Then the loop writes it; the flush that finds everything written lingers.
            transport.closeNotify()
            flush()
        case .linger:
            linger()
        case .answerBufferedFrames:
            // The peer took everything: answer the frames it sent meanwhile (on the next turn of the loop, not
            // inside this flush), then read again.
            setInterest(.none)
            let bound = LoopBound(self, eventLoop: loop)
            loop.execute { bound.value.answerBufferedFrames() }
        case .close:
            finish()
        }
    }
}
