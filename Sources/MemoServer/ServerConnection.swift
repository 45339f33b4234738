import Foundation
import MemoCore
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire
import Synchronization

/// One client: a non-blocking socket, its TLS engine and its protocol session, driven by one event loop.
///
/// Bytes flow socket -> TLS -> session (frames -> actions) on reads, and outbound queue -> TLS -> socket on
/// writes. Everything here runs on the connection's loop; store completions hop back to it. The lifecycle (which
/// phase, what an event leads to) is `ServerConnectionMachine`'s; this class feeds it events and runs its actions.
final class ServerConnection: EventHandler {
    let number: UInt64
    let peer: SocketAddress
    private let socket: TCPSocket
    private let tls: TLSEngine
    private let server: ServerCore
    private let context: LoopBound<LoopContext>
    private var loop: EventLoop { context.eventLoop }
    private var registration: Registration?
    /// What `registration` is watched for, kept here so that the flush after every delivery, which asks for
    /// `.readable` again, costs no lookup in the loop's registration table.
    private var registeredInterest: Interest = .readable
    private var session: ServerSession?
    private var machine = ServerConnectionMachine()
    var phase: ServerConnectionMachine.Phase { machine.phase }
    private var outbound = OutboundQueue()
    /// Ciphertext TLS made that the socket has not taken yet.
    private var pump = TLSPump()
    private var deadline: TimerHandle?
    /// Runs while a frame is begun but not whole (see `ServerLimits.frameTimeout`).
    private var frameDeadline: TimerHandle?
    /// Set when the connection was accepted over the limit: it is told so once TLS is up.
    private let rejected: Bool
    private var commonName = "-"
    /// The loop's sweep tick of the last read or write; buffers are given back after a tick without any.
    private var lastActiveTick: UInt64 = 0
    private var buffersHeld = true

    /// The role the client's certificate gives it, once TLS and `hello` are done; nil before.
    var role: Role? { session?.phase == .ready ? session?.role : nil }

    init(
        number: UInt64, socket: TCPSocket, peer: SocketAddress, tls: TLSEngine, server: ServerCore,
        context: LoopBound<LoopContext>, rejected: Bool
    ) {
        self.number = number
        self.socket = socket
        self.peer = peer
        self.tls = tls
        self.server = server
        self.context = context
        self.rejected = rejected
        #if DEBUG
        server.connectionObjects.add(1, ordering: .relaxed)
        server.sessionsHoldingKeys.add(1, ordering: .relaxed)
        #endif
    }

    #if DEBUG
    /// Whether this connection still counts in `sessionsHoldingKeys`.
    private var countedAsHoldingKeys = true

    deinit {
        server.connectionObjects.subtract(1, ordering: .relaxed)
        if countedAsHoldingKeys { server.sessionsHoldingKeys.subtract(1, ordering: .relaxed) }
    }

    private func countKeysIfGone() {
        guard countedAsHoldingKeys, !tls.holdsKeyMaterial else { return }
        countedAsHoldingKeys = false
        server.sessionsHoldingKeys.subtract(1, ordering: .relaxed)
    }
    #endif

    /// Registers with the loop and starts the handshake deadline. Call on the loop.
    func start() {
        do {
            try? socket.setNoDelay()
            // A client whose host died or whose network was cut is found by the kernel even with our writes
            // queued for it (a stopped client process still acknowledges, and backpressure covers it).
            try? socket.detectDeadPeer()
            registration = try loop.register(fileDescriptor: socket.fileDescriptor, interest: .readable, handler: self)
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
        let bound = LoopBound(self, eventLoop: loop)
        deadline = loop.schedule(after: .milliseconds(Int(server.limits.handshakeTimeout * 1000))) {
            bound.value.handshakeDeadlinePassed()
        }
    }

    // MARK: Reading

    func readable() {
        markActive(context.value)
        switch machine.readable() {
        case .read: readAndAnswer()
        case .discardInput: drainWhileClosing()
        case let action: run(action)
        }
    }

    private func readAndAnswer() {
        var peerClosed = false
        // At most an eighth of the outbound limit per wake-up (and 256 KiB): what is read is held until answered,
        // so it counts in what one connection can make the server hold.
        var budget = min(256 * 1024, max(16 * 1024, server.limits.maxOutboundBytes / 8))
        let ctx = context.value
        readLoop: while budget > 0 {
            let result: TCPSocket.ReadResult
            do {
                result = try ctx.readBuffer.withUnsafeMutableBytes { buffer throws(NetError) in
                    try TLSPump.read(from: socket, into: buffer, feeding: tls)
                }
            } catch {
                abort("read failed: \(error)")
                return
            }
            switch result {
            case .bytes(let count):
                budget -= count
                // A short read drained the socket: skip the read that would only say EAGAIN (one syscall per
                // request at one request in flight). epoll is level-triggered, so anything that arrives
                // meanwhile, the peer's FIN included, is reported again.
                if count < ctx.readBuffer.count { break readLoop }
            case .wouldBlock:
                break readLoop
            case .eof:
                peerClosed = true
                break readLoop
            }
        }
        processTLS()
        if peerClosed { run(machine.peerClosed(pendingWrites: session?.hasPendingWrites == true)) }
    }

    private func processTLS() {
        if !tls.isHandshakeComplete {
            do throws(TLSError) {
                guard try tls.handshake() == .done else {
                    flush()
                    return
                }
            } catch {
                context.value.counters.handshakes[1] &+= 1
                flush()  // the alert, if any, tells the peer why
                abort("TLS handshake failed: \(error.kind.summary)")
                return
            }
            context.value.counters.handshakes[0] &+= 1
            handshakeCompleted()
            guard machine.isServing else { return }
        }
        let ctx = context.value
        ctx.plaintext.removeAll(keepingCapacity: true)
        let result: TLSEngine.ReadResult
        do throws(TLSError) {
            result = try tls.readPlaintext(into: &ctx.plaintext)
        } catch {
            flush()
            // The whole description: the alert sent or received and why, not only "TLS failure".
            abort("TLS error: \(error)")
            return
        }
        if !ctx.plaintext.isEmpty {
            ctx.plaintext.withUnsafeBytes { answer($0) }
        }
        if ctx.plaintext.capacity > 256 * 1024 { ctx.plaintext = [] }
        // close_notify may come in the same read as the last frames (the result then counts the bytes).
        if result == .closed || tls.peerClosed, phase != .closed {
            beginClosing("peer sent close_notify")
        }
        checkOutboundLimit()
        flush()
    }

    /// Gives plaintext to the session and performs what it asks, taking frames only while the answers fit under
    /// the high-water mark; the rest stay buffered, and reading pauses until the peer takes what is queued.
    private func answer(_ plaintext: UnsafeRawBufferPointer, progress: Bool = false) {
        guard let framesBefore = session?.framesReceived else { return }
        // With `progress` (everything queued was taken) at least one frame is answered, whatever the count says.
        let budget = max(progress ? 1 : 0, highWater - outboundBytes)
        // Mutated in place: a copy sharing storage with `self.session` would copy the session's frame buffer and
        // request sets on every read.
        let actions = session?.receive(
            plaintext, store: server.store, outputBudget: budget, counters: &context.value.counters) ?? []
        let progressed = session?.framesReceived != framesBefore
        perform(actions)
        // A peer that sends requests and never reads the answers then holds at most about `highWater` bytes of
        // them, however many it sends.
        machine.framesAnswered(hasWholeFrame: session?.hasWholeFrame == true, overHighWater: outboundBytes > highWater)
        updateFrameDeadline(progressed: progressed)
    }

    /// Answers the frames left buffered by `answer` once the peer has taken everything queued before them.
    private func answerBufferedFrames() {
        guard machine.mayAnswerBufferedFrames else { return }
        answer(UnsafeRawBufferPointer(start: nil, count: 0), progress: true)
        flush()
    }

    /// Above this many bytes held for the peer, reading pauses; well under the slow-consumer limit, so that a peer
    /// that only sends requests is slowed down rather than dropped.
    private var highWater: Int { server.limits.maxOutboundBytes / 4 }

    /// Every byte held for the peer: queued frames with their overhead, records TLS has sealed, and ciphertext the
    /// socket has not taken, each counted by the memory it holds.
    var outboundBytes: Int {
        outbound.heldBytes + tls.outboundRetainedBytes + pump.retainedBytes
    }

    /// A peer that begins a frame must finish it within the frame timeout: without this, one that stops
    /// mid-frame holds its connection (and the partial frame) forever. The clock restarts with each whole frame,
    /// so a steady stream of pipelined frames that often ends mid-frame is never cut.
    private func updateFrameDeadline(progressed: Bool) {
        // While reading is paused the buffered bytes are whole frames we have not taken, not a slow peer.
        guard machine.frameDeadlineApplies(bufferedBytes: session?.bufferedBytes ?? 0) else {
            frameDeadline?.cancel()
            frameDeadline = nil
            return
        }
        if frameDeadline != nil, !progressed { return }
        frameDeadline?.cancel()
        let bound = LoopBound(self, eventLoop: loop)
        frameDeadline = loop.schedule(after: .milliseconds(Int(server.limits.frameTimeout * 1000))) {
            bound.value.frameDeadlinePassed()
        }
    }

    private func frameDeadlinePassed() {
        frameDeadline = nil
        let action = machine.frameDeadlinePassed(bufferedBytes: session?.bufferedBytes ?? 0)
        guard action == .notifyAndClose else { return }
        enqueue(.frame(Message.error(
            code: .frameTimeout,
            message: "a frame was begun and not finished within \(server.limits.frameTimeout) seconds"
        ).frame(requestID: 0)))
        beginClosing("frame not finished within \(server.limits.frameTimeout) s")
    }

    /// A log line about this connection, named as the open and close lines name it.
    private func logLine(_ line: LogLine) {
        server.log(
            line.level, line.name, [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName)] + line.fields,
            "\(line.event) conn=\(number) peer=\(peer) cn=\(commonName) \(line.detail)")
    }

    private func handshakeCompleted() {
        commonName = tls.peerCommonName ?? "-"
        let role: Role = tls.peerRole == .readOnly ? .readOnly : .readWrite
        let roleName = role == .readOnly ? "read-only" : "read-write"
        let version = tls.negotiatedProtocol ?? "?"
        server.log(
            .info, "open",
            [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName), ("role", roleName), ("tls", version)],
            "open conn=\(number) peer=\(peer) cn=\(commonName) role=\(roleName) tls=\(version)")
        if rejected {
            enqueue(.frame(Message.goingAway(
                code: .tooManyConnections,
                message: "the server is at its limit of \(server.limits.maxConnections) connections; try again later"
            ).frame(requestID: 0)))
            beginClosing("too many connections")
            return
        }
        session = ServerSession(limits: server.limits, role: role, serverName: server.serverName)
        // A handshake begun before a reload was verified against the previous list.
        closeIfRevoked(nil)
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
            case .send(let bytes):
                if phase == .handshaking, session?.phase == .ready { run(machine.helloAnswered()) }
                enqueue(.frame(bytes))
            case .sendList(let requestID, let revision, let memos):
                enqueue(.stream(ChunkStream(
                    requestID: requestID, revision: revision, memos: memos, snapshot: false,
                    maxFrameSize: server.limits.maxFrameSize)))
            case .sendPage(let requestID, let page):
                enqueue(.stream(ChunkStream(
                    requestID: requestID, revision: page.revision, memos: page.memos, snapshot: false,
                    maxFrameSize: server.limits.maxFrameSize, pageMore: page.more)))
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
                maxFrameSize: server.limits.maxFrameSize)))
        case .after(let revision):
            do throws(MemoError) {
                let (head, changes) = try store.changes(after: revision)
                context.value.subscribe(self, requestID: requestID, after: head)
                enqueue(.frame(Message.subscribed(head: head).frame(requestID: requestID)))
                for change in changes { enqueue(.frame(Message.change(change).frame(requestID: requestID))) }
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

    // MARK: Writing

    /// Queues a frame; a peer whose queue grows past the limit is dropped as a slow consumer.
    func enqueue(_ item: OutboundQueue.Item) {
        // Once lingering, our sending side is shut: answers to what is still being processed have nowhere to go.
        guard machine.acceptsOutput else { return }
        outbound.append(item)
        checkOutboundLimit()
    }

    /// Queues `message`'s frame, encoded into the queue (see `OutboundQueue.append(_:requestID:)`).
    func enqueue(_ message: Message, requestID: UInt32) {
        guard machine.acceptsOutput else { return }
        outbound.append(message, requestID: requestID)
        checkOutboundLimit()
    }

    /// Drops a peer that holds more than `--max-outbound` bytes (TLS records and overhead included).
    private func checkOutboundLimit() {
        if outboundBytes > server.limits.maxOutboundBytes, machine.isServing {
            // Drop what is queued (the client resumes from its revision) and say why, after the records already
            // encrypted; if the peer does not read even that, the closing deadline ends it.
            server.log(
                .warn, "slow_consumer",
                [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName),
                 ("queued_limit", "\(server.limits.maxOutboundBytes)")],
                "slow consumer conn=\(number) peer=\(peer) cn=\(commonName): over "
                    + "\(server.limits.maxOutboundBytes) bytes queued; dropping them and sending going-away")
            outbound.removeAll()
            outbound.append(.frame(Message.goingAway(
                code: .slowConsumer,
                message: "more than \(server.limits.maxOutboundBytes) bytes waiting for this client; "
                    + "reconnect and resume from your last revision").frame(requestID: 0)))
            beginClosing("slow consumer: outbound buffer over \(server.limits.maxOutboundBytes) bytes")
        }
    }

    private func markActive(_ ctx: LoopContext) {
        lastActiveTick = ctx.tick
        buffersHeld = true
    }

    /// Gives back the TLS buffers of a connection idle since the last sweep (called by the loop's sweep).
    func releaseIfIdle(currentTick: UInt64) {
        guard buffersHeld, lastActiveTick < currentTick, machine.isServing, outbound.isEmpty, pump.isEmpty else {
            return
        }
        pump.releaseBuffers()
        session?.releaseBuffers()
        tls.releaseBuffers(force: true)
        buffersHeld = false
    }

    /// Writes as much as the socket takes: queued frames into TLS, TLS records into the socket.
    func flush() {
        guard phase != .closed else { return }
        let ctx = context.value
        markActive(ctx)
        while true {
            // Records TLS holds go straight to the socket through the loop's buffer; only what it refuses is kept.
            let result: TLSPump.FlushResult
            do {
                result = try ctx.cipherBuffer.withUnsafeMutableBytes { scratch throws(NetError) in
                    try pump.flush(tls, to: socket, scratch: scratch)
                }
            } catch {
                abort("write failed: \(error)")
                return
            }
            if result == .blocked {
                run(machine.writeBlocked())
                return
            }
            guard !outbound.isEmpty, tls.isHandshakeComplete else { break }
            // Nothing is pending here (the pump drained it all), so one record's worth (a change for a subscriber,
            // a few answers) is sealed straight into the loop's buffer and written from there; more, or a record
            // behind a KeyUpdate, goes through TLS's queue and the pump. A lone change is sealed from its shared
            // frame, its request id set in the record's copy.
            let direct: TLSPump.FlushResult?
            do {
                if let (frame, requestID) = outbound.soleChange,
                   let written = try sealDirect(frame.bytes, ctx, requestID: requestID) {
                    outbound.removeSoleChange(frame)
                    direct = written
                } else {
                    ctx.writer.bytes.removeAll(keepingCapacity: true)
                    let listsSent = outbound.fill(&ctx.writer, upTo: 64 * 1024)
                    if listsSent > 0 { session?.listsSent(listsSent) }
                    direct = try sealDirect(ctx.writer.bytes, ctx)
                    if direct == nil { try tls.writePlaintext(ctx.writer.bytes) }
                }
            } catch let error as TLSError {
                abort("TLS write failed: \(error.kind.summary)")
                return
            } catch {
                abort("write failed: \(error)")
                return
            }
            if ctx.writer.bytes.capacity > 2 * WireProtocol.defaultMaxFrameSize {
                ctx.writer = WireWriter(capacity: 64 * 1024)
            }
            if direct == .blocked {
                run(machine.writeBlocked())
                return
            }
        }
        // Everything is written.
        run(machine.drained(
            pendingWrites: session?.hasPendingWrites == true, tlsComplete: tls.isHandshakeComplete,
            hasWholeFrame: session?.hasWholeFrame == true))
    }

    /// Seals `plaintext` into the loop's cipher buffer as one record and writes it; nil when it must go through
    /// TLS's queue instead (see `TLSEngine.sealDirect`). With `requestID`, `plaintext` is a shared change frame
    /// and the record carries that request id in its place.
    private func sealDirect(
        _ plaintext: [UInt8], _ ctx: LoopContext, requestID: UInt32? = nil
    ) throws -> TLSPump.FlushResult? {
        try ctx.cipherBuffer.withUnsafeMutableBytes { scratch -> TLSPump.FlushResult? in
            let sealed = try tls.sealDirect(plaintext, into: scratch) { frame in
                guard let requestID else { return }
                frame.storeBytes(of: requestID.bigEndian, toByteOffset: WireProtocol.requestIDOffset, as: UInt32.self)
            }
            guard let length = sealed else { return nil }
            return try pump.write(UnsafeRawBufferPointer(rebasing: scratch[..<length]), to: socket)
        }
    }

    private func setInterest(_ interest: Interest) {
        guard let registration, interest != registeredInterest else { return }
        do {
            try loop.setInterest(interest, for: registration)
            registeredInterest = interest
        } catch {
            abort("epoll: \(error.message)")
        }
    }

    func writable() {
        flush()
    }

    func hangup() {
        run(machine.hangup())
    }

    /// Runs what the machine asked for. `read`, `discardInput` and `notifyAndClose` are run where their event is
    /// handled, since only that code knows what to read or what to say.
    private func run(_ action: ServerConnectionMachine.Action) {
        switch action {
        case .none, .read, .discardInput, .notifyAndClose:
            break
        case .setInterest(let interest):
            setInterest(interest)
        case .cancelHandshakeDeadline:
            deadline?.cancel()
            deadline = nil
        case .startClosing:
            startClosing()
        case .sendCloseNotify:
            // Then the loop writes it; the flush that finds everything written lingers.
            tls.shutdown()
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

    // MARK: Closing

    /// Stops reading; closes once the writes in flight are answered and everything queued is written.
    func beginClosing(_ reason: String) {
        run(machine.beginClosing(reason))
    }

    private func startClosing() {
        deadline?.cancel()
        frameDeadline?.cancel()
        frameDeadline = nil
        context.value.removeSubscriptions(of: self)
        // A peer that does not read cannot hold the server up for long.
        let bound = LoopBound(self, eventLoop: loop)
        deadline = loop.schedule(after: .seconds(5)) {
            bound.value.run(bound.value.machine.closingDeadlinePassed())
        }
        flush()
    }

    private func linger() {
        do {
            try socket.shutdownWrite()
        } catch {
            run(machine.close(nil))
            return
        }
        setInterest(.readable)
        deadline?.cancel()
        let bound = LoopBound(self, eventLoop: loop)
        deadline = loop.schedule(after: .seconds(2)) { bound.value.run(bound.value.machine.lingerEnded()) }
    }

    /// Sends going-away and closes gracefully (by default: server shutdown).
    func goAway(_ message: String, code: ErrorCode = .shuttingDown, reason: String = "server shutting down") {
        switch machine.goAway(sessionReady: tls.isHandshakeComplete && session != nil, reason: reason) {
        case .notifyAndClose:
            enqueue(.frame(Message.goingAway(code: code, message: message).frame(requestID: 0)))
            beginClosing(reason)
        case let action:
            run(action)
        }
    }

    /// Closes with going-away 206 when the client's certificate is in `revoked` (by default: the list
    /// loaded last).
    func closeIfRevoked(_ revoked: Set<String>?) {
        guard let serial = tls.peerSerialNumber, revoked?.contains(serial) ?? server.trust.isRevoked(serial) else {
            return
        }
        goAway(
            "your certificate (serial \(serial)) has been revoked", code: .certificateRevoked,
            reason: "certificate revoked (serial \(serial))")
    }

    private func drainWhileClosing() {
        // Read and discard so that a peer's close is noticed; nothing more is served.
        let ctx = context.value
        for _ in 0..<16 {
            let result = try? ctx.readBuffer.withUnsafeMutableBytes { buffer throws(NetError) in
                try socket.read(into: buffer)
            }
            switch result {
            case .bytes: continue
            case .wouldBlock: return
            case .eof, nil: run(machine.discardedInputEnded())
            }
            return
        }
    }

    private func handshakeDeadlinePassed() {
        let reason = "handshake not finished within \(server.limits.handshakeTimeout) s"
        switch machine.handshakeDeadlinePassed(tlsComplete: tls.isHandshakeComplete, reason: reason) {
        case .notifyAndClose:
            enqueue(.frame(Message.error(
                code: .handshakeTimeout,
                message: "hello was not sent within \(server.limits.handshakeTimeout) seconds").frame(requestID: 0)))
            beginClosing(reason)
        case let action:
            run(action)
        }
    }

    /// Closes at once.
    func abort(_ reason: String) {
        run(machine.close(reason))
    }

    /// Runs the machine's `close`: the phase is already closed.
    private func finish() {
        deadline?.cancel()
        deadline = nil
        frameDeadline?.cancel()
        frameDeadline = nil
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
        // The session's keys go now, not when the last timer that holds this connection lets it go.
        tls.discard()
        #if DEBUG
        countKeysIfGone()
        #endif
        context.value.removeAll(of: self)
        context.value.counters.closes[CloseReason(reason: machine.closeReason).rawValue] &+= 1
        outbound.removeAll()
        let reason = machine.closeReason
        server.log(
            .info, "close", [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName), ("reason", reason)],
            "close conn=\(number) peer=\(peer) cn=\(commonName) reason=\"\(reason)\"")
        server.connectionClosed()
    }
}
