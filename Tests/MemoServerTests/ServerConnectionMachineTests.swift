import MemoNet
import Testing

@testable import MemoServer

/// `ServerConnectionMachine` driven event by event, with no socket, TLS engine or timer.
@Suite struct ServerConnectionMachineTests {
    /// A machine past hello.
    private func openMachine() -> ServerConnectionMachine {
        var machine = ServerConnectionMachine()
        #expect(machine.helloAnswered() == .cancelHandshakeDeadline)
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
        #expect(machine.helloAnswered() == .cancelHandshakeDeadline)
        #expect(machine.phase == .open)
        // A second hello answer (there is none, but a stray event must not reopen anything) does nothing.
        #expect(machine.helloAnswered() == .none)
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false)
            == .setInterest(.readable))
        #expect(machine.writeBlocked() == .setInterest(.all))
    }

    @Test func theHandshakeDeadlineClosesAtOnceWithoutTLSAndTellsThePeerWithIt() {
        var bare = ServerConnectionMachine()
        #expect(bare.handshakeDeadlinePassed(tlsComplete: false, reason: "slow") == .close)
        #expect(bare.phase == .closed)
        #expect(bare.closeReason == "slow")

        var machine = ServerConnectionMachine()
        #expect(machine.handshakeDeadlinePassed(tlsComplete: true, reason: "slow") == .notifyAndClose)
        #expect(machine.beginClosing("slow") == .startClosing)
        #expect(machine.phase == .closing)
        #expect(machine.readable() == .discardInput)
        drainToLinger(&machine)

        // Past hello, the handshake deadline (cancelled, but a timer may fire late) changes nothing.
        var open = openMachine()
        #expect(open.handshakeDeadlinePassed(tlsComplete: true, reason: "slow") == .none)
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
        #expect(machine.handshakeDeadlinePassed(tlsComplete: true, reason: "late") == .none)
        #expect(machine.hangup() == .none)
        #expect(machine.peerClosed(pendingWrites: true) == .none)
        #expect(machine.goAway(sessionReady: true, reason: "shutdown") == .none)
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
        #expect(machine.goAway(sessionReady: true, reason: "server shutting down") == .notifyAndClose)
        #expect(machine.beginClosing("server shutting down") == .startClosing)
        // A second going-away (revocation during shutdown) adds nothing.
        #expect(machine.goAway(sessionReady: true, reason: "certificate revoked") == .none)
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: false) == .setInterest(.none))
        #expect(machine.storeAnswered())
        #expect(machine.acceptsOutput)
        drainToLinger(&machine)
        #expect(machine.closeReason == "server shutting down")

        var early = ServerConnectionMachine()
        #expect(early.goAway(sessionReady: false, reason: "server shutting down") == .close)
        #expect(early.closeReason == "server shutting down")
    }

    @Test func backpressurePausesReadingUntilThePeerTakesEverything() {
        var machine = openMachine()
        // A KeyUpdate or a pile of answers: the session leaves whole frames buffered.
        machine.framesAnswered(hasWholeFrame: true, overHighWater: false)
        #expect(machine.readingPaused)
        #expect(machine.readable() == .setInterest(.writable))
        #expect(machine.writeBlocked() == .setInterest(.writable))
        #expect(!machine.mayAnswerBufferedFrames)
        // Buffered whole frames are not a slow peer: no frame deadline while paused.
        #expect(!machine.frameDeadlineApplies(bufferedBytes: 100))
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: true) == .answerBufferedFrames)
        #expect(!machine.readingPaused)
        #expect(machine.mayAnswerBufferedFrames)
        #expect(machine.readable() == .read)
        #expect(machine.frameDeadlineApplies(bufferedBytes: 100))

        // Paused only by the queue over its high-water mark: draining resumes reading directly.
        machine.framesAnswered(hasWholeFrame: false, overHighWater: true)
        #expect(machine.readingPaused)
        #expect(machine.drained(pendingWrites: false, tlsComplete: true, hasWholeFrame: false)
            == .setInterest(.readable))
        #expect(machine.readable() == .read)
    }

    @Test func pausedReadingStaysOffWhileClosing() {
        var machine = openMachine()
        machine.framesAnswered(hasWholeFrame: true, overHighWater: true)
        #expect(machine.beginClosing("slow consumer") == .startClosing)
        // Closing does not answer the buffered frames, it writes what is queued and goes.
        #expect(machine.drained(pendingWrites: true, tlsComplete: true, hasWholeFrame: true) == .setInterest(.none))
        #expect(machine.writeBlocked() == .setInterest(.writable))
        machine.framesAnswered(hasWholeFrame: true, overHighWater: true)
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
        #expect(!machine.frameDeadlineApplies(bufferedBytes: 0))
        #expect(machine.frameDeadlinePassed(bufferedBytes: 0) == .none)
        #expect(machine.frameDeadlinePassed(bufferedBytes: 3) == .notifyAndClose)
        #expect(machine.beginClosing("frame not finished") == .startClosing)
        #expect(machine.frameDeadlinePassed(bufferedBytes: 3) == .none)
        #expect(!machine.frameDeadlineApplies(bufferedBytes: 3))
    }
}
