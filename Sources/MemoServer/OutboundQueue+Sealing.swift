import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

extension OutboundQueue {
    /// A connection's flush: write rounds (`writeRound`) until everything is written or the socket refuses more.
    /// - Returns: whether the socket refused bytes (wait until it is writable).
    mutating func write(
        through transport: inout FramedTLSTransport, handshakeComplete: Bool, to socket: TCPSocket,
        scratch: UnsafeMutableRawBufferPointer, writer: inout WireWriter, listsSent: inout Int
    ) throws(WriteFailure) -> Bool {
        while let result = try writeRound(
            through: &transport, handshakeComplete: handshakeComplete, to: socket, scratch: scratch, writer: &writer,
            listsSent: &listsSent) {
            if result == .blocked { return true }
        }
        return false
    }

    /// One round of a connection's flush: what TLS already holds goes to the socket, then what is queued is
    /// sealed into records.
    ///
    /// Records TLS holds go straight to the socket through the loop's buffer (`scratch`); only what it refuses is
    /// kept. Nothing is pending after that, so one record's worth (a change for a subscriber, a few answers) is
    /// sealed straight into the loop's buffer and written from there; more, or a record behind a KeyUpdate, goes
    /// through TLS's queue. A lone change is sealed from its shared frame, its request id set in the record's copy.
    ///
    /// - Parameters:
    ///   - writer: the loop's buffer that queued frames are gathered in (up to 64 KiB a round).
    ///   - listsSent: increased by the `list` answers whose last chunk went out.
    /// - Returns: `.blocked` when the socket refused bytes (wait until it is writable), `.drained` when it took
    ///   this round's (go again), nil when everything is written.
    /// - Throws: `WriteFailure`, whose reason the connection closes with.
    mutating func writeRound(
        through transport: inout FramedTLSTransport, handshakeComplete: Bool, to socket: TCPSocket,
        scratch: UnsafeMutableRawBufferPointer, writer: inout WireWriter, listsSent: inout Int
    ) throws(WriteFailure) -> TLSPump.FlushResult? {
        // A writer grown for a large frame is not kept for the loop's next connection.
        defer {
            if writer.bytes.capacity > 2 * WireProtocol.defaultMaxFrameSize { writer = WireWriter(capacity: 64 * 1024) }
        }
        return try Self.failing {
            try sealRound(
                through: &transport, handshakeComplete: handshakeComplete, to: socket, scratch: scratch,
                writer: &writer, listsSent: &listsSent)
        }
    }

    /// What became of a change given to `deliver`.
    enum Delivery {
        /// Queued, for the caller to flush.
        case queued
        /// Written whole: nothing waits for the socket.
        case written
        /// Written in part: the rest of the record waits in the pump for the socket to be writable.
        case blocked
    }

    /// A subscriber's change. When `direct` and nothing waits for its socket (the queue empty, the pump flushed),
    /// it is sealed straight from its shared frame into `scratch`, its request id set in the record's copy, and
    /// written, without entering the queue; what the socket refuses stays in the pump, as after `writeRound`.
    /// Otherwise, or when it cannot be sealed alone (TLS holds records, or a KeyUpdate is due), it is queued.
    /// - Throws: `WriteFailure`, whose reason the connection closes with.
    mutating func deliver(
        _ frame: SharedFrame, requestID: UInt32, direct: Bool, through transport: inout FramedTLSTransport,
        to socket: TCPSocket, scratch: UnsafeMutableRawBufferPointer
    ) throws(WriteFailure) -> Delivery {
        if mayWriteAtOnce(direct: direct, flushed: transport.isFlushed), let written = try Self.failing({
            try frame.withBytes(for: version) {
                try transport.seal($0, to: socket, scratch: scratch, requestID: requestID)
            }
        }) {
            return written == .blocked ? .blocked : .written
        }
        append(.change(frame, requestID: requestID))
        return .queued
    }

    /// A subscriber's change for a loop's batched send: when `deliver` would write it at once, it is sealed into
    /// `buffer` instead, for the batch to send. - Returns: the record's length, or nil when it must go through
    /// `deliver` (not direct, something waits for the socket, or TLS cannot seal it alone). `transport` is inout
    /// only so that the connection's is not copied (and its references retained) for the call.
    /// `mutating` though it changes nothing: called on a connection's queue in place, where a non-mutating call
    /// would copy the queue (retaining its arrays) for the call.
    /// - Throws: `WriteFailure`, whose reason the connection closes with.
    mutating func stage(
        _ frame: SharedFrame, requestID: UInt32, direct: Bool, through transport: inout FramedTLSTransport,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(WriteFailure) -> Int? {
        guard mayWriteAtOnce(direct: direct, flushed: transport.isFlushed) else { return nil }
        return try Self.failing {
            try frame.withBytes(for: version) { try transport.sealForSending($0, into: buffer, requestID: requestID) }
        }
    }

    /// What became of a record from `stage` once the batch sent it: written, or blocked with the rest kept in the
    /// pump (as `deliver` leaves it).
    /// `mutating` for the same reason as `stage`.
    /// - Throws: `WriteFailure` for a failed send.
    mutating func sent(
        _ record: UnsafeRawBufferPointer, _ outcome: SendBatch.Outcome, through transport: inout FramedTLSTransport
    ) throws(WriteFailure) -> Delivery {
        let result = try Self.failing { try transport.sent(record, outcome) }
        return result == .blocked ? .blocked : .written
    }

    /// Whether a change may skip the queue: the connection writes at once and nothing waits for its socket.
    private func mayWriteAtOnce(direct: Bool, flushed: Bool) -> Bool {
        direct && isEmpty && flushed
    }

    /// Runs a write, its error turned into the connection's close reason.
    private static func failing<T>(_ write: () throws -> T) throws(WriteFailure) -> T {
        do {
            return try write()
        } catch let error as TLSError {
            throw WriteFailure(reason: "TLS write failed: \(error.kind.summary)")
        } catch {
            throw WriteFailure(reason: "write failed: \(error)")
        }
    }

    /// Queues the frame that tells the peer why it is closed, after dropping everything queued when the notice
    /// says so (a slow consumer); nothing is queued once output is no longer accepted (lingering).
    mutating func append(_ notice: ServerConnectionMachine.Notice, acceptsOutput: Bool) {
        if notice.dropQueued { removeAll() }
        if acceptsOutput { append(.frame(notice.frame)) }
    }

    /// Why a write round failed, as the connection's close reason.
    struct WriteFailure: Error {
        var reason: String
    }

    private mutating func sealRound(
        through transport: inout FramedTLSTransport, handshakeComplete: Bool, to socket: TCPSocket,
        scratch: UnsafeMutableRawBufferPointer, writer: inout WireWriter, listsSent: inout Int
    ) throws -> TLSPump.FlushResult? {
        if !isEmpty, handshakeComplete, transport.isFlushed, transport.tls.hasOutbound {
            // Records TLS holds (the session ticket, held until the welcome) and the frames behind them go out in
            // one write. A second write could fail on the reset the first drew from a peer that has closed, and the
            // connection would close before reading the requests still in its socket; one write that succeeds lets
            // the next read take them, as without a ticket.
            writer.bytes.removeAll(keepingCapacity: true)
            listsSent += fill(&writer, upTo: 64 * 1024)
            try transport.write(writer.bytes)
        }
        guard try transport.flush(to: socket, scratch: scratch) == .drained else { return .blocked }
        guard !isEmpty, handshakeComplete, !catchUpLost else { return nil }
        if let (frame, requestID) = soleChange,
           let written = try frame.withBytes(for: version, {
               try transport.seal($0, to: socket, scratch: scratch, requestID: requestID)
           }) {
            removeSoleChange(frame)
            return written
        }
        writer.bytes.removeAll(keepingCapacity: true)
        listsSent += fill(&writer, upTo: 64 * 1024)
        if let written = try transport.seal(writer.bytes, to: socket, scratch: scratch) { return written }
        try transport.write(writer.bytes)
        // Flushed now, not by the next round: that round would find TLS holding records with the pump empty, as
        // after a ticket, and seal another round's frames behind them before offering the socket any.
        return try transport.flush(to: socket, scratch: scratch)
    }
}
