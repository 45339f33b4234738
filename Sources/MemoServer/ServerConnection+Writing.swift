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

    /// Queues an answer that `encode` writes into the queue (`OutboundQueue.append(_:requestID:)`, or a get's
    /// `append(memo:requestID:)`).
    func enqueue(encoding encode: (inout OutboundQueue) -> Void) {
        guard machine.acceptsOutput else { return }
        encode(&outbound)
        checkOutboundLimit()
    }

    /// Drops a peer that holds more than `--max-outbound` bytes (see `ServerConnectionMachine.outboundHeld`).
    func checkOutboundLimit() {
        // Counted before the machine is read: an argument computed by a call could change the machine, so the
        // compiler would copy the machine to make the call with it.
        let held = outboundBytes
        if machine.isSlowConsumer(holding: held) { run(machine.slowConsumer()) }
    }

    /// Gives back the TLS buffers of a connection idle since the last sweep (called by the loop's sweep).
    func releaseIfIdle(currentTick: UInt64) {
        guard lastActiveTick < currentTick, machine.isServing, outbound.isEmpty, transport.isFlushed else { return }
        transport.releaseBuffers()
        lastActiveTick = .max  // given back: not again until the next read or write
    }

    /// Writes as much as the socket takes: queued frames into TLS, TLS records into the socket.
    func flush() {
        guard phase != .closed else { return }
        var listsSent = 0
        guard let blocked = writing({ scratch in
            try outbound.write(
                through: &transport, handshakeComplete: tls.isHandshakeComplete, to: socket, scratch: scratch,
                writer: &context.value.writer, listsSent: &listsSent)
        }) else { return }
        if listsSent > 0 { session?.listsSent(listsSent) }
        if outbound.catchUpLost { return run(machine.catchUpOvertaken()) }
        if blocked { return run(machine.writeBlocked()) }
        run(machine.drained(
            pendingWrites: session?.hasPendingWrites == true, tlsComplete: tls.isHandshakeComplete,
            hasWholeFrame: transport.frames.hasWholeFrame))
    }

    /// Delivers one change to this subscriber: written at once (`OutboundQueue.deliver`) when the flush after it
    /// would change nothing (serving, reading not paused, watched for reading only), else queued.
    /// - Returns: whether it was queued (the caller flushes).
    func deliver(_ frame: SharedFrame, requestID: UInt32) -> Bool {
        guard machine.acceptsOutput else { return true }  // lingering: nowhere to send it
        let direct = writesAtOnce
        guard let delivery = writing({ scratch in
            try outbound.deliver(
                frame, requestID: requestID, direct: direct, through: &transport, to: socket, scratch: scratch)
        }) else { return false }
        if delivery == .blocked { run(machine.writeBlocked()) }
        if delivery != .written { checkOutboundLimit() }  // what waits counts toward the slow-consumer limit
        return delivery == .queued
    }

    /// Whether the flush after a write would change nothing (serving, reading not paused, watched for reading
    /// only), so that a change may be written at once rather than queued (`deliver`, `stage`).
    private var writesAtOnce: Bool { machine.mayAnswerBufferedFrames && registeredInterest == .readable }

    /// Seals one change into `batch` when `deliver` would write it at once (`OutboundQueue.stage`); the loop
    /// submits the batch and hands each record's outcome to `sent`.
    /// - Returns: the send's index in `batch`; nil when the change is not staged: not direct, something waits for
    ///   the socket, TLS cannot seal it alone or `room` is too small (the caller `deliver`s it, which queues it),
    ///   or the connection takes no output or closed on a failed seal (`deliver` then does nothing).
    /// - Parameter tick: the loop's tick (`LoopContext.tick`), given by the loop rather than read through `context`.
    func stage(
        _ frame: SharedFrame, requestID: UInt32, into batch: SendBatch, room: UnsafeMutableRawBufferPointer,
        tick: UInt64
    ) -> Int? {
        // The descriptor is open while the connection takes output: only `finish` closes it, once closed.
        guard machine.acceptsOutput, sendDescriptor >= 0 else { return nil }
        let direct = writesAtOnce
        lastActiveTick = tick
        do {
            guard let length = try outbound.stage(
                frame, requestID: requestID, direct: direct, through: &transport, into: room)
            else { return nil }
            return batch.add(descriptor: sendDescriptor, length: length)
        } catch {
            abort(error.reason)
            return nil
        }
    }

    /// The outcome of a record `stage` put in a batch, once sent: as after `deliver`'s own write.
    func sent(_ record: UnsafeRawBufferPointer, _ outcome: SendBatch.Outcome) {
        do {
            if try outbound.sent(record, outcome, through: &transport) == .blocked {
                run(machine.writeBlocked())
                checkOutboundLimit()
            }
        } catch {
            abort(error.reason)
        }
    }

    /// Runs a write through the loop's buffer; one that fails closes the connection, and gives nil.
    private func writing<T>(_ write: (UnsafeMutableRawBufferPointer) throws -> T) -> T? {
        let ctx = context.value
        lastActiveTick = ctx.tick
        do {
            return try ctx.cipherBuffer.withUnsafeMutableBytes { scratch in try write(scratch) }
        } catch {
            abort((error as? OutboundQueue.WriteFailure)?.reason ?? "write failed: \(error)")
            return nil
        }
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
