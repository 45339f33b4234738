import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

/// One client, driven by one event loop: bytes flow socket -> transport (TLS, frames) -> session (frames ->
/// actions) on reads, and outbound queue -> transport -> socket on writes; store completions hop back to the loop.
///
/// An I/O driver: the decisions are values tested alone, the lifecycle `ServerConnectionMachine`'s (`run` carries
/// out every action it returns), the session's actions `SessionEffects`, a subscription's start
/// `SubscriptionStart`, sealing `OutboundQueue.write`, timers `ConnectionTimers`, log lines `ConnectionLogName`.
final class ServerConnection: EventHandler {
    var name: ConnectionLogName
    let socket: TCPSocket
    /// The socket's descriptor for a loop's batched sends (`TCPSocket.sendDescriptor`, -1 when embedded), kept here
    /// so that a batched delivery does not touch the socket object.
    let sendDescriptor: Int32
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
    var timers = ConnectionTimers()
    /// The sweep tick of the last read or write; a sweep tick without any gives the buffers back (then `.max`).
    var lastActiveTick: UInt64 = 0

    /// The role the client's certificate gives it, once TLS and `hello` are done; nil before.
    var role: Role? { machine.helloDone ? session?.role : nil }

    /// - Parameter rejected: accepted over the connection limit: told so once TLS is up, then closed.
    init(
        number: UInt64, socket: TCPSocket, peer: SocketAddress, tls: TLSEngine, server: ServerShared,
        context: LoopBound<LoopContext>, rejected: Bool
    ) {
        name = ConnectionLogName(number: number, peer: peer)
        self.socket = socket
        sendDescriptor = socket.sendDescriptor
        self.tls = tls
        transport = FramedTLSTransport(tls: tls, maxFrameSize: server.limits.maxFrameSize)
        self.server = server
        self.context = context
        machine = ServerConnectionMachine(limits: server.limits, rejected: rejected)
        #if DEBUG
        census = ConnectionCensus(server)
        #endif
    }

    #if DEBUG
    let census: ConnectionCensus
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
            server.log(name.cannotRegister(error))
            socket.close()
            server.connectionClosed()
            return
        }
        context.value.add(self)
        // Until hello, a server at its limit may close it to make room (`evictToMakeRoom`).
        if !machine.rejected { server.unestablished(name.number, LoopBound(self, eventLoop: loop)) }
        arm(.handshake)
    }

    /// Closes this connection to make room for a newer one, when it is still before hello: the server is at its
    /// connection limit and this is the oldest connection that has not said hello (`ServerShared.oldestUnestablished`).
    func evictToMakeRoom() {
        run(machine.evictedToMakeRoom(tlsComplete: tls.isHandshakeComplete))
    }

    // MARK: Reading

    func readable() {
        lastActiveTick = context.value.tick
        run(machine.readable())
    }

    private func readAndAnswer() {
        let budget = machine.readBudget  // what is read is held until answered: it counts in what the peer holds
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
        case .handshaking: break
        case .handshakeCompleted:
            ctx.counters.handshakes[0] &+= 1
            name.commonName = tls.peerCommonName ?? "-"
            server.log(name.record(.opened(
                readOnly: tls.peerRole == .readOnly, tls: tls.negotiatedProtocol, resumed: tls.resumedSession)))
            run(machine.tlsEstablished(holdingWrites: tls.negotiatedProtocol == "TLSv1.3"))
            if machine.isServing { advanceTransport() }
            return
        case .delivered(let closeNotify):
            answer()
            if ctx.plaintext.capacity > 256 * 1024 { ctx.plaintext = [] }
            if closeNotify { run(machine.closeNotifyReceived()) }
            checkOutboundLimit()
            if machine.holdsWrites, outbound.isEmpty { return }  // hello unread: the ticket waits for the welcome
        case .failed(_, let inHandshake):
            if inHandshake { ctx.counters.handshakes[1] &+= 1 }
            flush()  // the alert, if any, tells the peer why
            abort(inbound.reason ?? "TLS error")
            return
        }
        flush()
    }

    /// Gives the buffered frames to the session and performs what it asks, taking frames only while the answers fit
    /// under the high-water mark; the rest stay buffered, and reading pauses until the peer takes what is queued.
    private func answer(progress: Bool = false) {
        guard let framesBefore = session?.framesReceived else { return }
        let budget = machine.answerBudget(holding: outboundBytes, progress: progress)
        // Mutated in place: a copy sharing storage with `self.session` would copy the session's request sets.
        let actions = session?.receive(
            from: &transport.frames, awaitingHello: machine.awaitingHello, store: server.store,
            outputBudget: budget, counters: &context.value.counters) ?? []
        let progressed = session?.framesReceived != framesBefore
        perform(actions)
        // A peer that sends requests and never reads the answers then holds at most about `highWater` bytes of
        // them, however many it sends.
        run(machine.framesAnswered(
            hasWholeFrame: transport.frames.hasWholeFrame, overHighWater: outboundBytes > machine.highWater,
            bufferedBytes: transport.frames.bufferedByteCount, progressed: progressed))
    }

    /// Answers the frames left buffered by `answer` once the peer has taken everything queued before them.
    private func answerBufferedFrames() {
        guard machine.mayAnswerBufferedFrames else { return }
        answer(progress: true)
        flush()
    }

    /// Every byte held for the peer: queued frames with their overhead, records TLS has sealed, and ciphertext the
    /// socket has not taken, each counted by the memory it holds.
    var outboundBytes: Int { outbound.heldBytes + tls.outboundRetainedBytes + transport.ciphertextRetainedBytes }

    // MARK: Actions

    private func perform(_ actions: consuming [SessionAction]) {
        var steps = SessionEffects(
            actions, maxFrameSize: server.limits.maxFrameSize, version: session?.version ?? WireProtocol.minimumVersion)
        while let step = steps.next() {
            switch consume step {  // the batch's one reference moves on into the store (`submit`)
            case .submit(let requestIDs, let ops): submit(requestIDs, ops)
            case .queue(let item): enqueue(item)
            case .queueMemo(let requestID, let memo): enqueue { $0.append(memo: memo, requestID: requestID) }
            case .helloAccepted(let version):
                outbound.version = version  // every frame from here on is the agreed version's
                run(machine.helloAnswered())
            case .subscribe(let requestID, let start): subscribe(requestID, start)
            case .unsubscribe(let requestID): context.value.unsubscribe(self, requestID: requestID)
            case .close(let reason): run(machine.beginClosing(reason))
            case .log(let line): server.log(name.record(line))
            case .readOffLoop(let requestID, let read): read.start(for: self, requestID: requestID)
            }
            if phase == .closed { return }
        }
    }

    private func submit(_ requestIDs: [UInt32], _ ops: consuming [WriteOp]) {
        // Made per submit, not kept in a property: it holds this connection, which would then never be freed.
        let bound = LoopBound(self, eventLoop: loop)
        // One clock read per batch, not per write, for `memo_request_duration_seconds`.
        let started = monotonicNanos()
        server.store.submit(consume ops) { results in
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
        // Each result is read where it lies (an unsafe buffer's element is borrowed, not loaded): `zip`'s
        // element was a copy of the result, memo and all.
        let open = results.withUnsafeBufferPointer { results in
            for (requestID, index) in zip(requestIDs, results.indices) {
                guard machine.storeAnswered(), session != nil else { return false }
                // A success is encoded from the memo, no `Message`.
                if machine.acceptsOutput, outbound.append(success: results[index], requestID: requestID) {
                    session!.succeeded(requestID: requestID, counters: &ctx.counters)
                    continue
                }
                let (answer, line) = session!.completed(requestID: requestID, results[index], counters: &ctx.counters)
                if let line { server.log(name.record(line)) }
                enqueue { $0.append(answer, requestID: requestID) }
            }
            return true
        }
        guard open else { return }
        checkOutboundLimit()  // once for the batch's answers
        if now { flush() }
    }

    private func subscribe(_ requestID: UInt32, _ start: WatchStart) {
        let first = context.value.start(start, requestID: requestID, of: self)
        if first.head == nil { session?.subscriptionEnded(requestID) }
        for item in first.items { enqueue(item) }
    }

    /// Runs what the machine asked for; every action is handled here.
    func run(_ action: ServerConnectionMachine.Action) {
        switch action {
        case .none: break
        case .read: readAndAnswer()
        case .discardInput: drainWhileClosing()
        case .setInterest(let interest): setInterest(interest)
        case .startSession:
            session = ServerSession(limits: server.limits, certifiedBy: tls, serverName: server.serverName)
            // A handshake begun before a reload was verified against the previous list.
            closeIfRevoked(nil)
        case .arm(let deadline): arm(deadline)
        case .cancel(let deadline):
            timers.cancel(deadline)
            if deadline == .handshake { server.established(name.number) }  // hello answered: no longer evictable
        case .startClosing: startClosing()
        case .sendAndClose(let notice):
            if notice.dropQueued {
                server.log(notice.catchUpOvertaken
                    ? name.catchUpOvertaken() : name.slowConsumer(limit: server.limits.maxOutboundBytes))
            }
            outbound.append(notice, acceptsOutput: machine.acceptsOutput)
            run(machine.beginClosing(notice.reason))
        case .sendCloseNotify:
            // Then the loop writes it; the flush that finds everything written lingers.
            transport.closeNotify()
            flush()
        case .linger: linger()
        case .answerBufferedFrames:
            // The peer took everything: answer the frames it sent meanwhile (on the next turn of the loop, not
            // inside this flush), then read again.
            setInterest(.none)
            let bound = LoopBound(self, eventLoop: loop)
            loop.execute { bound.value.answerBufferedFrames() }
        case .close: finish()
        }
    }
}
