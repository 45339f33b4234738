import MemoDiagnostics
import MemoModel
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

extension ServerConnection {
    // MARK: Deadlines

    /// Starts `kind` for the machine's duration, replacing its slot's timer; when it passes, runs the machine's answer.
    func arm(_ kind: ServerConnectionMachine.Deadline) {
        let bound = LoopBound(self, eventLoop: loop)
        timers.replace(kind, with: loop.schedule(after: .milliseconds(Int(machine.duration(of: kind) * 1000))) {
            let connection = bound.value
            if kind == .frame { connection.timers.cancel(.frame) }
            let tlsComplete = connection.tls.isHandshakeComplete
            let buffered = connection.transport.frames.bufferedByteCount
            connection.run(connection.machine.deadlinePassed(kind, tlsComplete: tlsComplete, bufferedBytes: buffered))
        })
    }

    // MARK: Closing

    func startClosing() {
        timers.cancelAll()
        context.value.removeSubscriptions(of: self)
        arm(.closing)
        flush()
    }

    func linger() {
        do {
            try socket.shutdownWrite()
        } catch {
            run(machine.close(nil))
            return
        }
        setInterest(.readable)
        arm(.linger)
    }

    /// Sends going-away and closes gracefully (by default: server shutdown).
    func goAway(_ message: String, code: ErrorCode = .shuttingDown, reason: String = "server shutting down") {
        run(machine.goAway(sessionReady: sessionReady, code: code, message: message, reason: reason))
    }

    /// TLS is up and the session started: a going-away can be told to the peer.
    private var sessionReady: Bool { tls.isHandshakeComplete && session != nil }

    /// Closes with going-away 206 when the client's certificate is in `revoked` (by default: the list
    /// loaded last).
    func closeIfRevoked(_ revoked: Set<String>?) {
        guard let serial = tls.peerSerialNumber, revoked?.contains(serial) ?? server.trust.isRevoked(serial) else {
            return
        }
        run(machine.certificateRevoked(serial: serial, sessionReady: sessionReady))
    }

    func drainWhileClosing() {
        let ended = context.value.readBuffer.withUnsafeMutableBytes { buffer in
            FramedTLSTransport.discardInput(from: socket, through: buffer)
        }
        if ended { run(machine.discardedInputEnded()) }
    }

    /// Closes at once.
    func abort(_ reason: String) {
        run(machine.close(reason))
    }

    /// Runs the machine's `close`: the phase is already closed.
    func finish() {
        timers.cancelAll()
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
        // The session's keys go now, not when the last timer that holds this connection lets it go.
        tls.discard()
        #if DEBUG
        census.keysDiscarded(stillHeld: tls.holdsKeyMaterial)
        #endif
        context.value.removeAll(of: self, closedWith: machine.closeReason)
        if !machine.helloDone { server.established(name.number) }  // past hello, it was forgotten then
        outbound.removeAll()
        server.log(name.record(.closed(reason: machine.closeReason)))
        server.connectionClosed()
    }
}
