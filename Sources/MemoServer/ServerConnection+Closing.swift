import MemoDiagnostics
import MemoModel
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire
import Synchronization

extension ServerConnection {
    // MARK: Deadlines and log lines

    /// Schedules `event` on this loop after `seconds`, in `timer` (replacing what ran there), and runs the
    /// machine's answer to it.
    func schedule(
        _ timer: inout TimerHandle?, after seconds: Double,
        _ event: @escaping @Sendable (ServerConnection) -> ServerConnectionMachine.Action
    ) {
        timer?.cancel()
        let bound = LoopBound(self, eventLoop: loop)
        timer = loop.schedule(after: .milliseconds(Int(seconds * 1000))) {
            let connection = bound.value
            connection.run(event(connection))
        }
    }

    /// A log line about this connection, named as the open and close lines name it.
    func logLine(_ line: LogLine) {
        server.log(
            line.level, line.name, [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName)] + line.fields,
            "\(line.event) conn=\(number) peer=\(peer) cn=\(commonName) \(line.detail)")
    }

    // MARK: Closing

    /// Stops reading; closes once the writes in flight are answered and everything queued is written.
    func beginClosing(_ reason: String) {
        run(machine.beginClosing(reason))
    }

    func startClosing() {
        deadline?.cancel()
        frameDeadline?.cancel()
        frameDeadline = nil
        context.value.removeSubscriptions(of: self)
        // A peer that does not read cannot hold the server up for long.
        schedule(&deadline, after: 5) { $0.machine.closingDeadlinePassed() }
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
        schedule(&deadline, after: 2) { $0.machine.lingerEnded() }
    }

    /// Sends going-away and closes gracefully (by default: server shutdown).
    func goAway(_ message: String, code: ErrorCode = .shuttingDown, reason: String = "server shutting down") {
        run(machine.goAway(
            sessionReady: tls.isHandshakeComplete && session != nil, code: code, message: message, reason: reason))
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

    func drainWhileClosing() {
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

    /// Closes at once.
    func abort(_ reason: String) {
        run(machine.close(reason))
    }

    /// Runs the machine's `close`: the phase is already closed.
    func finish() {
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
        if countedAsHoldingKeys, !tls.holdsKeyMaterial {
            countedAsHoldingKeys = false
            server.sessionsHoldingKeys.subtract(1, ordering: .relaxed)
        }
        #endif
        context.value.removeAll(of: self)
        context.value.counters.closes[CloseReason(reason: machine.closeReason).rawValue] &+= 1
        outbound.removeAll()
        let reason = machine.closeReason
        logLine(LogLine(
            event: "close", detail: "reason=\"\(reason)\"", name: "close", level: .info, fields: [("reason", reason)]))
        server.connectionClosed()
    }
}
