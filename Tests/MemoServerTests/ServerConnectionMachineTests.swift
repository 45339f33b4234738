import MemoNet
import MemoWire
import Testing

@testable import MemoServer

/// `ServerConnectionMachine` driven event by event, with no socket, TLS engine or timer.
@Suite struct ServerConnectionMachineTests {
    /// A machine past hello.
    private func openMachine() -> ServerConnectionMachine {
        var machine = ServerConnectionMachine()
        #expect(machine.helloAnswered() == .cancel(.handshake))
        return machine
    }

    /// Drives a machine with nothing left to answer from closing to lingering, as the shell does.
    private func drainToLinger(_ machine: inout ServerConnectionMachine) {
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false) == .sendCloseNotify)
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false) == .linger)
        #expect(machine.phase == .lingering)
    }

    @Test func aConnectionReadsThroughTheHandshakeAndOpensOnHello() {
        var machine = ServerConnectionMachine()
        #expect(machine.phase == .handshaking)
        #expect(machine.readable() == .read)
        #expect(machine.helloAnswered() == .cancel(.handshake))
        #expect(machine.phase == .open)
        // A second hello answer (there is none, but a stray event must not reopen anything) does nothing.
        #expect(machine.helloAnswered() == .none)
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false)
            == .setInterest(.readable))
        #expect(machine.writeBlocked() == .setInterest(.all))
    }

    @Test func theHandshakeDeadlineClosesAtOnceWithoutTLSAndTellsThePeerWithIt() {
        var bare = ServerConnectionMachine()
        #expect(bare.handshakeDeadlinePassed(tlsComplete: false) == .close)
        #expect(bare.phase == .closed)
        #expect(bare.closeReason == "handshake not finished within 10.0 s")

        var machine = ServerConnectionMachine()
        #expect(machine.handshakeDeadlinePassed(tlsComplete: true) == .sendAndClose(.init(
            code: .handshakeTimeout, message: "hello was not sent within 10.0 seconds",
            reason: "handshake not finished within 10.0 s", goingAway: false)))
        #expect(machine.beginClosing("handshake not finished within 10.0 s") == .startClosing)
        #expect(machine.phase == .closing)
        #expect(machine.readable() == .discardInput)
        drainToLinger(&machine)

        // Past hello, the handshake deadline (cancelled, but a timer may fire late) changes nothing.
        var open = openMachine()
        #expect(open.handshakeDeadlinePassed(tlsComplete: true) == .none)
        #expect(open.phase == .open)
    }

    @Test func closeNotifyIsSkippedWhenTLSNeverFinished() {
        var machine = ServerConnectionMachine()
        #expect(machine.beginClosing("too many connections") == .startClosing)
        #expect(machine.drained(pendingWrites: false, tlsComplete: false, hasWholeFrame: false) == .linger)
        #expect(!machine.closeNotifySent)
    }

    @Test func aStoreAnswerAfterCloseIsNotWritten() {
        var machine = openMachine()
        // The peer sends a write and its FIN; the write is in flight at the store.
        #expect(machine.peerClosed(pendingWrites: true) == .startClosing)
        #expect(machine.closeReason == "peer closed the connection")
        // Everything queued is written, but the write is still out: no close_notify, no linger, no reading.
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: false) == .setInterest(.none))
        #expect(machine.phase == .closing)
        #expect(machine.storeAnswered())
        // The store is slow: the closing deadline ends the connection.
        #expect(machine.closingDeadlinePassed() == .close)
        // The close line names why closing began, not the deadline that ended it.
        #expect(machine.closeReason == "peer closed the connection")
        // The answer that arrives now must not be queued.
        #expect(!machine.storeAnswered())
        #expect(!machine.acceptsOutput)
    }

    @Test func aStoreAnswerWhileClosingIsWrittenBeforeCloseNotify() {
        var machine = openMachine()
        #expect(machine.peerClosed(pendingWrites: true) == .startClosing)
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: false) == .setInterest(.none))
        #expect(machine.storeAnswered())
        #expect(machine.acceptsOutput)
        drainToLinger(&machine)
        #expect(!machine.acceptsOutput)
    }

    @Test func deadlinesAndEventsAfterCloseDoNothing() {
        var machine = openMachine()
        #expect(machine.close("write failed") == .close)
        #expect(machine.closingDeadlinePassed() == .none)
        #expect(machine.lingerEnded() == .none)
        #expect(machine.frameDeadlinePassed(bufferedBytes: 10) == .none)
        #expect(machine.handshakeDeadlinePassed(tlsComplete: true) == .none)
        #expect(machine.hangup() == .none)
        #expect(machine.peerClosed(pendingWrites: true) == .none)
        #expect(machine.goAway(sessionReady: true, code: .shuttingDown, message: "bye", reason: "shutdown") == .none)
        #expect(machine.beginClosing("again") == .none)
        #expect(machine.discardedInputEnded() == .none)
        #expect(machine.close("again") == .none)
        #expect(machine.phase == .closed)
        #expect(machine.closeReason == "write failed")
    }

    @Test func theClosingDeadlineDoesNothingOnceLingering() {
        var machine = openMachine()
        // A linger timer that fires late (from an earlier life of the slot) must not close a live connection.
        #expect(machine.lingerEnded() == .none)
        #expect(machine.beginClosing("done") == .startClosing)
        #expect(machine.lingerEnded() == .none)
        drainToLinger(&machine)
        #expect(machine.closingDeadlinePassed() == .none)
        #expect(machine.lingerEnded() == .close)
        #expect(machine.closeReason == "done")
    }

    @Test func goingAwayWhileRequestsArePendingAnswersThemFirst() {
        var machine = openMachine()
        #expect(machine.goAway(sessionReady: true, code: .shuttingDown, message: "bye", reason: "server shutting down")
            == .sendAndClose(.init(
                code: .shuttingDown, message: "bye", reason: "server shutting down", goingAway: true)))
        #expect(machine.beginClosing("server shutting down") == .startClosing)
        // A second going-away (revocation during shutdown) adds nothing.
        #expect(machine.goAway(sessionReady: true, code: .certificateRevoked, message: "revoked",
            reason: "certificate revoked") == .none)
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: false) == .setInterest(.none))
        #expect(machine.storeAnswered())
        #expect(machine.acceptsOutput)
        drainToLinger(&machine)
        #expect(machine.closeReason == "server shutting down")

        var early = ServerConnectionMachine()
        #expect(early.goAway(sessionReady: false, code: .shuttingDown, message: "bye", reason: "server shutting down")
            == .close)
        #expect(early.closeReason == "server shutting down")
    }

    @Test func backpressurePausesReadingUntilThePeerTakesEverything() {
        var machine = openMachine()
        // A KeyUpdate or a pile of answers: the session leaves whole frames buffered.
        #expect(machine.framesAnswered(hasWholeFrame: true, overHighWater: false, bufferedBytes: 100, progressed: true)
            == .none)
        #expect(machine.readingPaused)
        #expect(machine.readable() == .setInterest(.writable))
        #expect(machine.writeBlocked() == .setInterest(.writable))
        #expect(!machine.mayAnswerBufferedFrames)
        // Buffered whole frames are not a slow peer: no frame deadline while paused (above: none armed).
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: true) == .answerBufferedFrames)
        #expect(!machine.readingPaused)
        #expect(machine.mayAnswerBufferedFrames)
        #expect(machine.readable() == .read)
        #expect(machine.framesAnswered(
            hasWholeFrame: false, overHighWater: false, bufferedBytes: 100, progressed: false) == .arm(.frame))

        // Paused only by the queue over its high-water mark: draining resumes reading directly.
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: true, bufferedBytes: 0, progressed: false)
            == .cancel(.frame))
        #expect(machine.readingPaused)
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false)
            == .setInterest(.readable))
        #expect(machine.readable() == .read)
    }

    @Test func pausedReadingStaysOffWhileClosing() {
        var machine = openMachine()
        _ = machine.framesAnswered(hasWholeFrame: true, overHighWater: true, bufferedBytes: 0, progressed: false)
        #expect(machine.beginClosing("slow consumer") == .startClosing)
        // Closing does not answer the buffered frames, it writes what is queued and goes.
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: true) == .setInterest(.none))
        #expect(machine.writeBlocked() == .setInterest(.writable))
        #expect(machine.framesAnswered(hasWholeFrame: true, overHighWater: true, bufferedBytes: 9, progressed: true)
            == .none)
        #expect(!machine.mayAnswerBufferedFrames)
    }

    @Test func peerEOFDuringLingerCloses() {
        var machine = openMachine()
        #expect(machine.beginClosing("frame not finished within 5.0 s") == .startClosing)
        drainToLinger(&machine)
        #expect(machine.readable() == .discardInput)
        #expect(machine.discardedInputEnded() == .close)
        #expect(machine.closeReason == "frame not finished within 5.0 s")
        #expect(machine.lingerEnded() == .none)
    }

    @Test func aHangupWhileClosingKeepsTheReasonForClosing() {
        var closing = openMachine()
        #expect(closing.beginClosing("certificate revoked") == .startClosing)
        #expect(closing.hangup() == .close)
        #expect(closing.closeReason == "certificate revoked")

        var open = openMachine()
        #expect(open.hangup() == .close)
        #expect(open.closeReason == "hung up")

        var failing = openMachine()
        #expect(failing.beginClosing("slow consumer") == .startClosing)
        #expect(failing.close("write failed") == .close)
        #expect(failing.closeReason == "slow consumer")
    }

    @Test func peerEOFWithoutWritesInFlightClosesAtOnce() {
        var machine = openMachine()
        #expect(machine.peerClosed(pendingWrites: false) == .close)
        #expect(machine.closeReason == "peer closed the connection")
    }

    @Test func theFrameDeadlineClosesOnlyAServingConnectionWithAPartialFrame() {
        var machine = openMachine()
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 0, progressed: false)
            == .none)
        #expect(machine.frameDeadlinePassed(bufferedBytes: 0) == .none)
        guard case .sendAndClose(let notice) = machine.frameDeadlinePassed(bufferedBytes: 3) else {
            Issue.record("a partial frame past its deadline was not closed")
            return
        }
        #expect(notice.code == .frameTimeout)
        #expect(machine.beginClosing(notice.reason) == .startClosing)
        #expect(machine.frameDeadlinePassed(bufferedBytes: 3) == .none)
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 3, progressed: true)
            == .none)
    }

    // MARK: The policies the machine holds

    @Test func aConnectionOverTheLimitIsToldSoOnceTLSIsUpAndNeverStartsASession() {
        var limits = ServerLimits()
        limits.maxConnections = 3
        var rejected = ServerConnectionMachine(limits: limits, rejected: true)
        #expect(rejected.tlsEstablished() == .sendAndClose(.init(
            code: .tooManyConnections,
            message: "the server is at its limit of 3 connections; try again later",
            reason: "too many connections", goingAway: true)))
        var within = ServerConnectionMachine(limits: limits)
        #expect(within.tlsEstablished() == .startSession)
        #expect(within.awaitingHello)
        #expect(within.helloAnswered() == .cancel(.handshake))
        #expect(!within.awaitingHello)
    }

    @Test func aPeerHoldingMoreThanTheOutboundLimitIsDroppedOnceAsASlowConsumer() {
        var limits = ServerLimits()
        limits.maxOutboundBytes = 1000
        var machine = ServerConnectionMachine(limits: limits)
        _ = machine.helloAnswered()
        #expect(machine.outboundHeld(1000) == .none)
        let drop = ServerConnectionMachine.Action.sendAndClose(.init(
            code: .slowConsumer,
            message: "more than 1000 bytes waiting for this client; reconnect and resume from your last revision",
            reason: "slow consumer: outbound buffer over 1000 bytes", goingAway: true, dropQueued: true))
        #expect(machine.outboundHeld(1001) == drop)
        #expect(machine.beginClosing("slow consumer: outbound buffer over 1000 bytes") == .startClosing)
        // Closing: what is queued (the going-away among it) may grow past the limit without a second drop.
        #expect(machine.outboundHeld(5000) == .none)
    }

    @Test func theFrameDeadlineArmsOnAPartialFrameRearmsOnProgressAndStopsWhenWhole() {
        var limits = ServerLimits()
        limits.frameTimeout = 2
        var machine = ServerConnectionMachine(limits: limits)
        _ = machine.helloAnswered()
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 0, progressed: true)
            == .none)
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 3, progressed: false)
            == .arm(.frame))
        #expect(machine.frameDeadlineArmed)
        // More bytes of the same frame: the clock runs on.
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 5, progressed: false)
            == .none)
        // A whole frame taken and the next one begun: the clock restarts.
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 2, progressed: true)
            == .arm(.frame))
        // Nothing buffered: the deadline stops.
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 0, progressed: true)
            == .cancel(.frame))
        #expect(!machine.frameDeadlineArmed)
        #expect(machine.framesAnswered(hasWholeFrame: false, overHighWater: false, bufferedBytes: 4, progressed: false)
            == .arm(.frame))
        #expect(machine.frameDeadlinePassed(bufferedBytes: 4) == .sendAndClose(.init(
            code: .frameTimeout, message: "a frame was begun and not finished within 2.0 seconds",
            reason: "frame not finished within 2.0 s", goingAway: false)))
        #expect(!machine.frameDeadlineArmed)
        // A deadline that fires after the frame came whole does nothing.
        var finished = ServerConnectionMachine(limits: limits)
        #expect(finished.frameDeadlinePassed(bufferedBytes: 0) == .none)
    }

    @Test func closeNotifyBeginsClosingOnceAndTLSFailureClosesAtOnce() {
        var machine = openMachine()
        #expect(machine.closeNotifyReceived() == .startClosing)
        #expect(machine.closeReason == "peer sent close_notify")
        #expect(machine.closeNotifyReceived() == .none)
        var failing = ServerConnectionMachine()
        #expect(failing.tlsFailed("TLS handshake failed: bad certificate") == .close)
        #expect(failing.closeReason == "TLS handshake failed: bad certificate")
        #expect(failing.tlsEstablished() == .none)
    }
}
