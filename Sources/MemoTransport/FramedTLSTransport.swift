import MemoNet
import MemoTLS
import MemoWire

/// One framed TLS connection's transport as a value: the TLS engine's state, the frame decoder the plaintext
/// goes into, and the pump that moves ciphertext to the socket. Events go in (bytes read, the socket writable, its
/// end of stream), and each says what came of it (frames delivered, the peer's close_notify, a failure with its
/// reason, records to write). It keeps no deadline and decides no policy: the connection that drives it (the
/// server's `ServerConnection`, the client's `WireConnection`, the probe's `TLSStream`) waits for its socket its own
/// way (epoll, or `poll` with a deadline) and decides what a close_notify or a failure leads to.
///
/// The one copy of the handshake → read plaintext → close_notify → flush loop; `TLSPump` is only its byte mover.
public struct FramedTLSTransport {
    public let tls: TLSEngine
    /// Plaintext read so far, cut into frames by whoever takes them.
    public var frames: FrameDecoder
    /// Internal for the inlinable reads below, which a driver holding the transport in a class property would
    /// otherwise make on a copy of the whole transport (a retain and release of each of its parts per read).
    @usableFromInline internal var pump = TLSPump()
    /// The peer ended its TLS stream (close_notify); reported once, by the `advance` that read it.
    public private(set) var closeNotifyReceived = false

    /// What an `advance` over the bytes read so far came to. After each, `flush` sends what TLS wrote (handshake
    /// messages, alerts, KeyUpdate answers).
    public enum Inbound {
        /// The handshake goes on.
        case handshaking
        /// The handshake finished: the driver checks the peer, then advances again to read what followed it.
        case handshakeCompleted
        /// Plaintext (maybe none: a partial record) was delivered; `closeNotify` when the peer ended its stream in
        /// this read (after the bytes delivered with it).
        case delivered(closeNotify: Bool)
        /// TLS failed: flush (the alert tells the peer why), then close (`reason` says why in a log's words).
        case failed(TLSError, inHandshake: Bool)

        /// A failure's reason as a close is logged with: the handshake's in brief, a record's whole (the alert
        /// sent or received and why, not only "TLS failure"); nil for the other cases.
        public var reason: String? {
            guard case .failed(let error, let inHandshake) = self else { return nil }
            return inHandshake ? "TLS handshake failed: \(error.kind.summary)" : "TLS error: \(error)"
        }
    }

    /// How a `read` stopped.
    public enum ReadEnd: Equatable {
        /// The socket had no more (or the read was short: level-triggered epoll reports anything later).
        case drained
        /// The byte budget was spent with more maybe waiting.
        case budgetSpent
        /// The peer closed its sending side.
        case endOfFile
    }

    public init(tls: TLSEngine, maxFrameSize: Int = WireProtocol.defaultMaxFrameSize) {
        self.tls = tls
        frames = FrameDecoder(maxFrameSize: maxFrameSize)
    }

    // MARK: Bytes read

    /// Reads from `socket` through `buffer` and feeds TLS, until the socket is drained, its stream ends, or
    /// `budget` bytes were read. A short read counts as drained: it skips the read that would only say EAGAIN
    /// (one syscall per request at one request in flight).
    public mutating func read(
        from socket: TCPSocket, through buffer: UnsafeMutableRawBufferPointer, budget: Int = .max
    ) throws(NetError) -> ReadEnd {
        var left = budget
        while left > 0 {
            switch try socket.read(into: buffer) {
            case .bytes(let count):
                tls.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                left -= count
                if count < buffer.count { return .drained }
            case .wouldBlock:
                return .drained
            case .eof:
                return .endOfFile
            }
        }
        return .budgetSpent
    }

    /// Reads from `socket` through `buffer` and throws the bytes away, at most 16 reads: for a connection that
    /// serves nothing more but must notice its peer's close. - Returns: whether the peer's stream ended (or the
    /// read failed).
    public static func discardInput(from socket: TCPSocket, through buffer: UnsafeMutableRawBufferPointer) -> Bool {
        for _ in 0..<16 {
            switch try? socket.read(into: buffer) {
            case .bytes: continue
            case .wouldBlock: return false
            case .eof, nil: return true
            }
        }
        return false
    }

    /// Advances TLS over what was fed: the handshake, or the plaintext, appended to `frames` through `scratch`
    /// (a buffer lent for the call, kept by the driver so that its capacity is reused).
    public mutating func advance(scratch: inout [UInt8]) -> Inbound {
        scratch.removeAll(keepingCapacity: true)
        let inbound = advance(appendingTo: &scratch)
        if !scratch.isEmpty { scratch.withUnsafeBytes { frames.append($0) } }
        return inbound
    }

    /// `advance`, with the plaintext appended to `plaintext` instead of `frames` (a stream that is not framed:
    /// the benchmarks' Redis client).
    public mutating func advance(appendingTo plaintext: inout [UInt8]) -> Inbound {
        if !tls.isHandshakeComplete {
            do throws(TLSError) {
                guard try tls.handshake() == .done else { return .handshaking }
            } catch {
                return .failed(error, inHandshake: true)
            }
            return .handshakeCompleted
        }
        let result: TLSEngine.ReadResult
        do throws(TLSError) {
            result = try tls.readPlaintext(into: &plaintext)
        } catch {
            return .failed(error, inHandshake: false)
        }
        // close_notify may come in the same read as the last frames (the result then counts the bytes).
        let closing = (result == .closed || tls.peerClosed) && !closeNotifyReceived
        if closing { closeNotifyReceived = true }
        return .delivered(closeNotify: closing)
    }

    // MARK: Writing

    /// Encrypts `plaintext` into TLS's queue; `flush` sends it.
    public func write(_ plaintext: [UInt8]) throws(TLSError) {
        try tls.writePlaintext(plaintext)
    }

    /// Writes what the socket refused before, then TLS's records, until all is written or the socket would
    /// block (then flush again once it is writable).
    public mutating func flush(to socket: TCPSocket, scratch: UnsafeMutableRawBufferPointer) throws(NetError)
        -> TLSPump.FlushResult
    {
        try pump.flush(tls, to: socket, scratch: scratch)
    }

    /// Seals `plaintext` as one record into `scratch` and writes it, when nothing is queued before it; nil when
    /// it must go through `write` instead (see `TLSEngine.sealDirect`). With `requestID`, `plaintext` is a shared
    /// frame and the record carries that request id in its place. Call after a `flush` that drained.
    public mutating func seal(
        _ plaintext: [UInt8], to socket: TCPSocket, scratch: UnsafeMutableRawBufferPointer, requestID: UInt32? = nil
    ) throws -> TLSPump.FlushResult? {
        guard let length = try sealForSending(plaintext, into: scratch, requestID: requestID) else { return nil }
        return try pump.write(UnsafeRawBufferPointer(rebasing: scratch[..<length]), to: socket)
    }

    /// Seals `plaintext` as one record into `buffer` for a caller that sends it elsewhere (`SendBatch`, or `seal`
    /// itself), then hands the outcome to `sent`; nil when it must go through `write` instead. Same conditions and
    /// `requestID` as `seal`.
    /// - Returns: the record's length in `buffer`.
    public func sealForSending(
        _ plaintext: [UInt8], into buffer: UnsafeMutableRawBufferPointer, requestID: UInt32?
    ) throws -> Int? {
        try tls.sealDirect(plaintext, into: buffer) { frame in
            guard let requestID else { return }
            frame.storeBytes(of: requestID.bigEndian, toByteOffset: WireProtocol.requestIDOffset, as: UInt32.self)
        }
    }

    /// The outcome of sending a record from `sealForSending`: what the socket refused waits for `flush`.
    /// - Throws: the send's error.
    public mutating func sent(
        _ record: UnsafeRawBufferPointer, _ outcome: Result<TCPSocket.WriteResult, NetError>
    ) throws(NetError) -> TLSPump.FlushResult {
        pump.keep(record, after: try outcome.get())
    }

    /// Queues close_notify; `flush` sends it.
    public func closeNotify() {
        tls.shutdown()
    }

    // MARK: Memory

    /// The memory held for the peer: records TLS sealed and ciphertext the socket has not taken.
    @inlinable public var retainedBytes: Int { tls.outboundRetainedBytes + ciphertextRetainedBytes }

    /// The memory held for ciphertext the socket has not taken (`retainedBytes` without TLS's own records).
    @inlinable public var ciphertextRetainedBytes: Int { pump.retainedBytes }

    /// No ciphertext waits for the socket.
    @inlinable public var isFlushed: Bool { pump.isEmpty }

    /// Gives back the buffers of an idle connection (nothing waiting for the socket, no partial frame).
    public mutating func releaseBuffers() {
        if pump.isEmpty { pump.releaseBuffers() }
        if frames.bufferedByteCount == 0 { frames = FrameDecoder(maxFrameSize: frames.maxFrameSize) }
        tls.releaseBuffers(force: true)
    }
}
