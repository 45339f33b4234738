import MemoNet

/// The lifecycle of one server connection as a value: each method takes an event and returns what the I/O shell
/// (`ServerConnection`) must do. It holds no socket, no TLS engine and no timer, so every transition is tested
/// without them; the shell reads facts off its parts (is TLS done, are writes in flight) and passes them in.
///
/// handshaking -> open -> closing -> lingering -> closed; any phase may go straight to closed (abort).
/// Each event returns one `Action` (no allocation on the hot path); an action that stands for several steps
/// says which in its comment.
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

    enum Action: Equatable {
        case none
        /// Read from the socket and hand the plaintext to the session.
        case read
        /// Read and discard, to notice the peer's close (closing or lingering).
        case discardInput
        case setInterest(Interest)
        /// Hello was answered: cancel the handshake deadline.
        case cancelHandshakeDeadline
        /// Closing began: cancel the deadlines, stop the subscriptions, start the closing deadline, flush.
        case startClosing
        /// Queue the frame that says why (error or going-away), then begin closing.
        case notifyAndClose
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

    private(set) var phase = Phase.handshaking
    /// Not reading from the peer, nor answering the frames it already sent, until what is queued for it drains
    /// (backpressure, as TCP gives a blocking server).
    private(set) var readingPaused = false
    private(set) var closeNotifySent = false
    private(set) var closeReason = ""

    /// Handshaking or open: reading, answering and deadlines of the running connection apply.
    var isServing: Bool { phase == .handshaking || phase == .open }

    /// Frames may still be queued for the peer (not once our sending side is shut or the socket closed).
    var acceptsOutput: Bool { phase != .closed && phase != .lingering }

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

    /// The session took what it could of a read; it pauses reading while whole frames wait or the queue is over
    /// the high-water mark.
    mutating func framesAnswered(hasWholeFrame: Bool, overHighWater: Bool) {
        if isServing, hasWholeFrame || overHighWater { readingPaused = true }
    }

    /// Whether buffered frames may be answered now (after `answerBufferedFrames`).
    var mayAnswerBufferedFrames: Bool { isServing && !readingPaused }

    /// Whether a partial frame's deadline should run: only while serving and reading, with bytes buffered.
    func frameDeadlineApplies(bufferedBytes: Int) -> Bool {
        isServing && !readingPaused && bufferedBytes > 0
    }

    /// The frame deadline passed: with a frame still unfinished the peer is told (error 304) and the connection
    /// closes.
    mutating func frameDeadlinePassed(bufferedBytes: Int) -> Action {
        guard isServing, bufferedBytes > 0 else { return .none }
        return .notifyAndClose
    }

    // MARK: Handshake

    /// Hello was answered while handshaking.
    mutating func helloAnswered() -> Action {
        guard phase == .handshaking else { return .none }
        phase = .open
        return .cancelHandshakeDeadline
    }

    /// The handshake deadline passed: with TLS up the peer is told (hello missing); without it, closed at once.
    mutating func handshakeDeadlinePassed(tlsComplete: Bool, reason: String) -> Action {
        guard phase == .handshaking else { return .none }
        return tlsComplete ? .notifyAndClose : close(reason)
    }

    // MARK: Writing

    /// A store answered a write: whether its answer can still be sent.
    func storeAnswered() -> Bool { phase != .closed }

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

    // MARK: Closing

    /// Stops reading; the connection closes once writes in flight are answered and everything queued is written.
    mutating func beginClosing(_ reason: String) -> Action {
        guard isServing else { return .none }
        phase = .closing
        closeReason = reason
        return .startClosing
    }

    /// Going-away (shutdown, revocation): told to the peer when the session is up, otherwise closed at once.
    mutating func goAway(sessionReady: Bool, reason: String) -> Action {
        guard isServing else { return .none }
        return sessionReady ? .notifyAndClose : close(reason)
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
        return .close
    }
}
