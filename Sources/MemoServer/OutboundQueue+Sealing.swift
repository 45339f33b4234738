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

    /// A subscriber's delivery when nothing waits for its socket (the queue empty, the pump flushed): the change
    /// is sealed straight from its shared frame into `scratch`, its request id set in the record's copy, and
    /// written, without entering the queue. What the socket refuses stays in the pump, as after `writeRound`.
    /// - Returns: nil when the change cannot be sealed alone (TLS holds records, or a KeyUpdate is due): queue
    ///   it; else `.drained` or `.blocked`, as `writeRound` says.
    /// - Throws: `WriteFailure`, whose reason the connection closes with.
    func writeChange(
        _ frame: SharedFrame, requestID: UInt32, through transport: inout FramedTLSTransport, to socket: TCPSocket,
        scratch: UnsafeMutableRawBufferPointer
    ) throws(WriteFailure) -> TLSPump.FlushResult? {
        precondition(isEmpty && transport.isFlushed, "writeChange with bytes still waiting for the socket")
        return try Self.failing {
            try transport.seal(frame.bytes(for: version), to: socket, scratch: scratch, requestID: requestID)
        }
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

    /// Why a write round failed, as the connection's close reason.
    struct WriteFailure: Error {
        var reason: String
    }

    private mutating func sealRound(
        through transport: inout FramedTLSTransport, handshakeComplete: Bool, to socket: TCPSocket,
        scratch: UnsafeMutableRawBufferPointer, writer: inout WireWriter, listsSent: inout Int
    ) throws -> TLSPump.FlushResult? {
        guard try transport.flush(to: socket, scratch: scratch) == .drained else { return .blocked }
        guard !isEmpty, handshakeComplete else { return nil }
        if let (frame, requestID) = soleChange,
           let written = try transport.seal(
               frame.bytes(for: version), to: socket, scratch: scratch, requestID: requestID) {
            removeSoleChange(frame)
            return written
        }
        writer.bytes.removeAll(keepingCapacity: true)
        listsSent += fill(&writer, upTo: 64 * 1024)
        if let written = try transport.seal(writer.bytes, to: socket, scratch: scratch) { return written }
        try transport.write(writer.bytes)
        return .drained
    }
}
