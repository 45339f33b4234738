import MemoModel
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

extension ServerConnection {
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

    /// Drops a peer that holds more than `--max-outbound` bytes (see `ServerConnectionMachine.outboundHeld`).
    func checkOutboundLimit() {
        // Counted before the machine is read: an argument computed by a call could change the machine, so the
        // compiler would copy the machine to make the call with it.
        let held = outboundBytes
        if machine.isSlowConsumer(holding: held) { run(machine.slowConsumer()) }
    }

    func markActive(_ ctx: LoopContext) {
        lastActiveTick = ctx.tick
        buffersHeld = true
    }

    /// Gives back the TLS buffers of a connection idle since the last sweep (called by the loop's sweep).
    func releaseIfIdle(currentTick: UInt64) {
        guard buffersHeld, lastActiveTick < currentTick, machine.isServing, outbound.isEmpty, transport.isFlushed
        else { return }
        transport.releaseBuffers()
        buffersHeld = false
    }

    /// Writes as much as the socket takes: queued frames into TLS, TLS records into the socket.
    func flush() {
        guard phase != .closed else { return }
        let ctx = context.value
        markActive(ctx)
        while true {
            // Records TLS holds go straight to the socket through the loop's buffer; only what it refuses is kept.
            // Nothing is pending after that, so one record's worth (a change for a subscriber, a few answers) is
            // sealed straight into the loop's buffer and written from there; more, or a record behind a KeyUpdate,
            // goes through TLS's queue. A lone change is sealed from its shared frame, its request id set in the
            // record's copy.
            let result: TLSPump.FlushResult?
            do {
                result = try ctx.cipherBuffer.withUnsafeMutableBytes { scratch in
                    guard try transport.flush(to: socket, scratch: scratch) == .drained else { return .blocked }
                    guard !outbound.isEmpty, tls.isHandshakeComplete else { return nil }
                    if let (frame, requestID) = outbound.soleChange,
                       let written = try transport.seal(
                           frame.bytes(for: outbound.version), to: socket, scratch: scratch, requestID: requestID) {
                        outbound.removeSoleChange(frame)
                        return written
                    }
                    ctx.writer.bytes.removeAll(keepingCapacity: true)
                    let listsSent = outbound.fill(&ctx.writer, upTo: 64 * 1024)
                    if listsSent > 0 { session?.listsSent(listsSent) }
                    if let written = try transport.seal(ctx.writer.bytes, to: socket, scratch: scratch) {
                        return written
                    }
                    try transport.write(ctx.writer.bytes)
                    return .drained
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
            guard let result else { break }  // everything is written
            if result == .blocked {
                run(machine.writeBlocked())
                return
            }
        }
        run(machine.drained(
            pendingWrites: session?.hasPendingWrites == true, tlsComplete: tls.isHandshakeComplete,
            hasWholeFrame: transport.frames.hasWholeFrame))
    }

    func setInterest(_ interest: Interest) {
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
}
