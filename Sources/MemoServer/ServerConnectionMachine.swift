import MemoNet
import MemoWire

/// The lifecycle of one server connection as a value: each method takes an event and returns what the I/O shell
/// (`ServerConnection`) must do. It holds no socket, no TLS engine and no timer, so every transition is tested
/// without them; the shell reads facts off its parts (are writes in flight, how many bytes are held) and passes
/// them in. The policies are here too: the rejection over the connection limit, the slow-consumer drop, the frame
/// deadline's arming, the handshake deadline, and what a close_notify or a peer's end of stream leads to.
///
/// handshaking (TLS, then hello) -> open -> closing -> lingering -> closed; any phase may go straight to closed
/// (abort). Each event returns one `Action` (no allocation on the hot path); an action that stands for several
/// steps says which in its comment.
struct ServerConnectionMachine {
    enum Phase: Equatable {
        /// TLS and hello not done yet.
        case handshaking
        /// Serving requests.
        case open
        /// Not reading any more; closes once writes in flight are answered and everything is flushed.
        case closing
        /// Everything is sent and our side shut down; reading and discarding until the peer closes too, so that
        /// a request still in flight from the peer does not make the kernel reset the connection (which would
        /// destroy the error or going-away frame before the peer reads it).
        case lingering
        case closed
    }

    /// The frame that tells the peer why it is closed, and the reason the close is logged with.
    struct Notice: Equatable {
        var code: ErrorCode
        var message: String
        var reason: String
        /// Sent as going-away (the server ends the connection) rather than as an error (the peer did wrong).
        var goingAway: Bool
        /// Drop everything queued first (a slow consumer: the client resumes from its revision), and log why.
        var dropQueued = false
        /// The slow consumer's catch-up was overtaken by the history (`catchUpOvertaken`), not over the limit.
        var catchUpOvertaken = false

        /// The frame that says it, with request id 0.
        var frame: [UInt8] {
            let message = goingAway
                ? Message.goingAway(code: code, message: message) : Message.error(code: code, message: message)
            return message.frame(requestID: 0)
        }
    }

    /// The connection's timers: the handshake, closing and linger deadlines follow one another in one slot, the
    /// frame deadline runs beside them.
    enum Deadline: Equatable {
        case handshake, frame, closing, linger
    }

    enum Action: Equatable {
        case none
        /// Read from the socket and hand the plaintext to the session.
        case read
        /// Read and discard, to notice the peer's close (closing or lingering).
        case discardInput
        case setInterest(Interest)
        /// TLS is up and the connection is within the limit: start the protocol session (hello next).
        case startSession
        /// Start this deadline (again, if it runs): a frame is begun (the frame deadline).
        case arm(Deadline)
        /// Stop this deadline: hello was answered (the handshake deadline); no frame is begun, or reading paused
        /// (the frame deadline).
        case cancel(Deadline)
        /// Closing began: cancel the deadlines, stop the subscriptions, start the closing deadline, flush.
        case startClosing
        /// Queue the notice's frame (after dropping the queue when it says so), then begin closing with its reason.
        case sendAndClose(Notice)
        /// Everything is written: queue close_notify and flush it.
        case sendCloseNotify
        /// Everything is written, close_notify too: shut down writing, read until the peer closes or the linger
        /// deadline passes.
        case linger
        /// The peer took everything queued: stop reading, and answer the frames it sent meanwhile on the next
        /// turn of the loop.
        case answerBufferedFrames
        /// Close the socket now (deregister, cancel the deadlines, log `closeReason`).
        case close
    }

    let limits: ServerLimits
    /// Accepted over the connection limit: told so once TLS is up, then closed.
    let rejected: Bool
    private(set) var phase = Phase.handshaking
    /// Not reading from the peer, nor answering the frames it already sent, until what is queued for it drains
    /// (backpressure, as TCP gives a blocking server).
    private(set) var readingPaused = false
    private(set) var closeNotifySent = false
    private(set) var frameDeadlineArmed = false
    /// Hello was answered (the phase moves on from open when closing; this stays).
    private(set) var helloDone = false
    /// TLS 1.3 came up with writes held until hello is answered (see `holdsWrites`).
    private var writesHeldUntilHello = false
    private(set) var closeReason = ""

    init(limits: ServerLimits = ServerLimits(), rejected: Bool = false) {
        self.limits = limits
        self.rejected = rejected
    }

    /// Handshaking or open: reading, answering and deadlines of the running connection apply.
    var isServing: Bool { phase == .handshaking || phase == .open }

    /// Hello is still due (TLS may be up).
    var awaitingHello: Bool { phase == .handshaking }

    /// TLS 1.3 is up and hello is not answered yet: the reads of this phase write nothing. All TLS has to send then
    /// is its session ticket, and it goes out with the answer to hello (the welcome, or the error that closes), so
    /// that the server's first write comes after it has read what the client sent behind its Finished. A ticket
    /// written at once reaches a client that may already have sent hello and a request and closed (a script, a
    /// proxy giving up): the peer's kernel answers it with a reset, and the requests not yet read could be lost
    /// with the connection. TLS 1.2's last flight (the server's Finished) is part of the handshake and not held.
    var holdsWrites: Bool { writesHeldUntilHello && phase == .handshaking }

    /// Frames may still be queued for the peer (not once our sending side is shut or the socket closed).
    var acceptsOutput: Bool { phase != .closed && phase != .lingering }

    /// Above this many bytes held for the peer, reading pauses; well under the slow-consumer limit, so that a peer
    /// that only sends requests is slowed down rather than dropped.
    var highWater: Int { limits.maxOutboundBytes / 4 }

    /// The most one read takes from the socket: an eighth of the outbound limit (at least 16 KiB, at most
    /// 256 KiB). What is read is held until answered, so it counts in what one connection can make the server hold.
    var readBudget: Int { min(256 * 1024, max(16 * 1024, limits.maxOutboundBytes / 8)) }

    /// How many bytes of answers the session may make from the frames buffered, with `held` bytes already held
    /// for the peer: up to the high-water mark, and at least one frame's when `progress` (everything queued was
    /// taken), whatever the count says.
    func answerBudget(holding held: Int, progress: Bool) -> Int {
        max(progress ? 1 : 0, highWater - held)
    }

    // MARK: Reading

    /// The socket is readable.
    mutating func readable() -> Action {
        guard isServing else { return .discardInput }
        guard !readingPaused else { return .setInterest(.writable) }
        return .read
    }

    /// The peer closed its side (EOF). With writes in flight they are answered first (the peer may only have
    /// shut down its sending side).
    mutating func peerClosed(pendingWrites: Bool) -> Action {
        if phase == .closed { return .none }
        if pendingWrites { return beginClosing("peer closed the connection") }
        return close("peer closed the connection")
    }

    /// The peer ended its TLS stream (close_notify): what it sent before is answered, then the connection closes.
    mutating func closeNotifyReceived() -> Action {
        beginClosing("peer sent close_notify")
    }

    /// The session took what it could of a read; it pauses reading while whole frames wait or the queue is over
    /// the high-water mark. Then the frame deadline: a peer that begins a frame must finish it within the frame
    /// timeout, or it holds its connection (and the partial frame) forever. The clock restarts with each whole
    /// frame (`progressed`), so a steady stream of pipelined frames that often ends mid-frame is never cut; while
    /// reading is paused the buffered bytes are whole frames not taken yet, not a slow peer.
    mutating func framesAnswered(
        hasWholeFrame: Bool, overHighWater: Bool, bufferedBytes: Int, progressed: Bool
    ) -> Action {
        if isServing, hasWholeFrame || overHighWater { readingPaused = true }
        guard isServing, !readingPaused, bufferedBytes > 0 else {
            guard frameDeadlineArmed else { return .none }
            frameDeadlineArmed = false
            return .cancel(.frame)
        }
        if frameDeadlineArmed, !progressed { return .none }
        frameDeadlineArmed = true
        return .arm(.frame)
    }

    /// Whether buffered frames may be answered now (after `answerBufferedFrames`).
    var mayAnswerBufferedFrames: Bool { isServing && !readingPaused }

    /// The frame deadline passed: with a frame still unfinished the peer is told (error 304) and the connection
    /// closes.
    mutating func frameDeadlinePassed(bufferedBytes: Int) -> Action {
        frameDeadlineArmed = false
        guard isServing, bufferedBytes > 0 else { return .none }
        return .sendAndClose(Notice(
            code: .frameTimeout,
            message: "a frame was begun and not finished within \(limits.frameTimeout) seconds",
            reason: "frame not finished within \(limits.frameTimeout) s", goingAway: false))
    }

    // MARK: Handshake

    /// TLS finished: over the connection limit the peer is told so and closed; otherwise the session starts.
    /// - Parameter holdingWrites: TLS 1.3 (whose handshake ends with the client's Finished): nothing is written
    ///   until hello is answered (`holdsWrites`).
    mutating func tlsEstablished(holdingWrites: Bool = false) -> Action {
        guard isServing else { return .none }
        writesHeldUntilHello = holdingWrites
        guard !rejected else {
            return .sendAndClose(Notice(
                code: .tooManyConnections,
                message: "the server is at its limit of \(limits.maxConnections) connections; try again later",
                reason: "too many connections", goingAway: true))
        }
        return .startSession
    }

    /// TLS failed (handshake or records): closed at once, after the alert that says why is flushed.
    mutating func tlsFailed(_ reason: String) -> Action {
        close(reason)
    }

    /// Hello was answered while handshaking.
    mutating func helloAnswered() -> Action {
        guard phase == .handshaking else { return .none }
        phase = .open
        helloDone = true
        return .cancel(.handshake)
    }

    /// The handshake deadline passed: with TLS up the peer is told (hello missing); without it, closed at once.
    mutating func handshakeDeadlinePassed(tlsComplete: Bool) -> Action {
        endBeforeHello(tlsComplete: tlsComplete, Notice(
            code: .handshakeTimeout, message: "hello was not sent within \(limits.handshakeTimeout) seconds",
            reason: "handshake not finished within \(limits.handshakeTimeout) s", goingAway: false))
    }

    /// The server is at its connection limit and this connection, still before hello, is the oldest such: it is
    /// closed to make room for a newer one. With TLS up the peer is told why; without it, closed at once.
    mutating func evictedToMakeRoom(tlsComplete: Bool) -> Action {
        endBeforeHello(tlsComplete: tlsComplete, Notice(
            code: .tooManyConnections,
            message: "the server is at its limit of \(limits.maxConnections) connections and this connection had "
                + "not sent hello; closed to make room",
            reason: "too many connections: closed before hello to make room for a newer connection", goingAway: true))
    }

    /// Ends a connection still before hello: closed at once while TLS is not up, else after `notice` tells the peer
    /// why; nothing once hello is done.
    private mutating func endBeforeHello(tlsComplete: Bool, _ notice: Notice) -> Action {
        guard phase == .handshaking else { return .none }
        guard tlsComplete else { return close(notice.reason) }
        return .sendAndClose(notice)
    }

    // MARK: Writing

    /// A store answered a write: whether its answer can still be sent.
    func storeAnswered() -> Bool { phase != .closed }

    /// Bytes held for the peer changed (a frame queued, records sealed): a peer that holds more than
    /// `--max-outbound` is a slow consumer, dropped with going-away 301 after the records already encrypted (if
    /// it does not read even those, the closing deadline ends it).
    mutating func outboundHeld(_ bytes: Int) -> Action {
        isSlowConsumer(holding: bytes) ? slowConsumer() : .none
    }

    /// `outboundHeld`'s test alone, for the hot path (every frame queued): no action to make and run when it is
    /// false; `slowConsumer()` when it is true.
    @inline(__always)
    func isSlowConsumer(holding bytes: Int) -> Bool {
        bytes > limits.maxOutboundBytes && isServing
    }

    /// The drop of a slow consumer (see `outboundHeld`).
    func slowConsumer() -> Action {
        .sendAndClose(Notice(
            code: .slowConsumer,
            message: "more than \(limits.maxOutboundBytes) bytes waiting for this client; "
                + "reconnect and resume from your last revision",
            reason: "slow consumer: outbound buffer over \(limits.maxOutboundBytes) bytes", goingAway: true,
            dropQueued: true))
    }

    /// A resumed subscription's catch-up lost changes the history let go of before they were sent: the peer did not
    /// take them fast enough. Dropped as a slow consumer (going-away 301) with everything queued; it resumes from its
    /// revision and is answered `history-gone`.
    func catchUpOvertaken() -> Action {
        guard isServing else { return .none }
        return .sendAndClose(Notice(
            code: .slowConsumer,
            message: "the changes this connection was catching up on were let go of before they were sent; "
                + "reconnect and resume from your last revision",
            reason: "slow consumer: its catch-up was overtaken by the history", goingAway: true, dropQueued: true,
            catchUpOvertaken: true))
    }

    /// The socket refused more bytes.
    func writeBlocked() -> Action {
        .setInterest(readingPaused ? .writable : .all)
    }

    /// Everything queued is written (the socket took all of it). The facts are asked only when the phase needs
    /// them: this runs after every delivery to every subscriber, where neither is needed.
    mutating func drained(
        pendingWrites: @autoclosure () -> Bool, tlsComplete: Bool, hasWholeFrame: @autoclosure () -> Bool
    ) -> Action {
        if phase == .closing, !pendingWrites() {
            if !closeNotifySent, tlsComplete {
                // close_notify before the lingering close (RFC 8446 §6.1), so that the peer knows the stream ended
                // whole rather than was cut.
                closeNotifySent = true
                return .sendCloseNotify
            }
            phase = .lingering
            return .linger
        }
        if readingPaused, phase != .closing {
            readingPaused = false
            if hasWholeFrame() { return .answerBufferedFrames }
        }
        return .setInterest(phase == .closing ? .none : .readable)
    }

    // MARK: Deadlines

    /// How long `deadline` runs once started.
    func duration(of deadline: Deadline) -> Double {
        switch deadline {
        case .handshake: limits.handshakeTimeout
        case .frame: limits.frameTimeout
        // A peer that does not read what is queued cannot hold the server up for long.
        case .closing: 5
        case .linger: 2
        }
    }

    /// `deadline` passed: what follows is that deadline's own event's answer (the facts are read when it fires).
    mutating func deadlinePassed(_ deadline: Deadline, tlsComplete: Bool, bufferedBytes: Int) -> Action {
        switch deadline {
        case .handshake: handshakeDeadlinePassed(tlsComplete: tlsComplete)
        case .frame: frameDeadlinePassed(bufferedBytes: bufferedBytes)
        case .closing: closingDeadlinePassed()
        case .linger: lingerEnded()
        }
    }

    // MARK: Closing

    /// Stops reading; the connection closes once writes in flight are answered and everything queued is written.
    mutating func beginClosing(_ reason: String) -> Action {
        guard isServing else { return .none }
        phase = .closing
        closeReason = reason
        frameDeadlineArmed = false
        return .startClosing
    }

    /// Going-away (shutdown, revocation, a lagging store): told to the peer when the session is up, otherwise
    /// closed at once.
    mutating func goAway(sessionReady: Bool, code: ErrorCode, message: String, reason: String) -> Action {
        guard isServing else { return .none }
        guard sessionReady else { return close(reason) }
        return .sendAndClose(Notice(code: code, message: message, reason: reason, goingAway: true))
    }

    /// The peer's certificate is on the revocation list: going-away 206 (see `goAway`).
    mutating func certificateRevoked(serial: String, sessionReady: Bool) -> Action {
        goAway(
            sessionReady: sessionReady, code: .certificateRevoked,
            message: "your certificate (serial \(serial)) has been revoked",
            reason: "certificate revoked (serial \(serial))")
    }

    /// The socket hung up.
    mutating func hangup() -> Action {
        close(phase == .closing ? closeReason : "hung up")
    }

    /// The closing deadline passed: the peer did not take what was queued in time (or the store did not answer).
    /// The close keeps the reason closing began with.
    mutating func closingDeadlinePassed() -> Action {
        guard phase == .closing else { return .none }
        return close(nil)
    }

    /// The linger deadline passed.
    mutating func lingerEnded() -> Action {
        guard phase == .lingering else { return .none }
        return close(nil)
    }

    /// The peer closed while we were discarding its input (closing or lingering): nothing more can reach it.
    mutating func discardedInputEnded() -> Action {
        guard phase == .closing || phase == .lingering else { return .none }
        return close(nil)
    }

    /// Closes at once. `reason` replaces the recorded one unless closing had begun (its reason explains the
    /// close better than the step that ended it); nil keeps the recorded one.
    mutating func close(_ reason: String?) -> Action {
        guard phase != .closed else { return .none }
        if let reason, closeReason.isEmpty || (phase != .closing && phase != .lingering) { closeReason = reason }
        phase = .closed
        frameDeadlineArmed = false
        return .close
    }
}
