import MemoNet
import MemoTLS

/// Moves a TLS engine's records to a non-blocking socket, keeping what the socket refuses with its partial-write
/// offset until it is writable: `FramedTLSTransport`'s byte mover (its reads go through the transport).
///
/// Whoever drives the transport decides what to do when the socket would block (wait for epoll, or wait in `poll`
/// with a deadline).
public struct TLSPump {
    /// Ciphertext taken from TLS that the socket has not accepted yet; the first `pendingOffset` bytes are sent.
    @usableFromInline internal var pending: [UInt8] = []
    @usableFromInline internal var pendingOffset = 0

    public enum FlushResult: Sendable, Equatable {
        /// The engine holds no records and every byte taken from it is in the kernel.
        case drained
        /// The socket's send buffer is full: wait until it is writable and flush again.
        case blocked
    }

    public init() {}

    /// Writes what the socket refused before, then the engine's records, straight from `scratch` (only what the
    /// socket refuses is copied), until everything is written or the socket would block.
    /// - Parameter scratch: a buffer lent for the call; its contents are not kept.
    /// - Throws: the socket's error.
    public mutating func flush(
        _ tls: TLSEngine, to socket: TCPSocket, scratch: UnsafeMutableRawBufferPointer
    ) throws(NetError) -> FlushResult {
        while true {
            if pendingOffset < pending.count {
                let offset = pendingOffset
                // withUnsafeBytes only rethrows untyped: the error comes out as a Result.
                let attempt = pending.withUnsafeBytes { raw in
                    Result { () throws(NetError) in
                        try socket.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                    }
                }
                guard case .wrote(let count) = try attempt.get() else { return .blocked }
                pendingOffset += count
                if pendingOffset == pending.count {
                    // A burst's worth of capacity is kept; a huge one is given back.
                    pending.removeAll(keepingCapacity: pending.capacity <= 64 * 1024)
                    pendingOffset = 0
                }
                continue
            }
            guard tls.hasOutbound else { return .drained }
            let taken = tls.takeOutbound(into: scratch)
            if try write(UnsafeRawBufferPointer(rebasing: scratch[..<taken]), to: socket) == .blocked {
                return .blocked
            }
        }
    }

    /// Writes ciphertext from the caller's buffer (records taken from the engine by `flush`, or sealed there by
    /// `TLSEngine.sealDirect`); what the socket refuses is kept and sent by the next `flush`. Call only when
    /// `isEmpty` and the engine holds no ciphertext before these bytes, so that they go out in order.
    public mutating func write(_ bytes: UnsafeRawBufferPointer, to socket: TCPSocket) throws(NetError) -> FlushResult {
        precondition(isEmpty, "TLSPump.write with ciphertext still pending")
        return keep(bytes, after: try socket.write(bytes))
    }

    /// Takes the outcome of a write of `bytes` made elsewhere (`SendBatch`), as `write` takes its own: what the
    /// socket refused is kept for the next `flush`. Same conditions as `write`.
    public mutating func keep(_ bytes: UnsafeRawBufferPointer, after result: TCPSocket.WriteResult) -> FlushResult {
        precondition(isEmpty, "TLSPump.keep with ciphertext still pending")
        let written: Int
        switch result {
        case .wrote(let count): written = count
        case .wouldBlock: written = 0
        }
        guard written < bytes.count else { return .drained }
        pending.append(contentsOf: bytes[written...])
        return .blocked
    }

    /// True when no ciphertext waits for the socket (the engine may still hold records).
    @inlinable public var isEmpty: Bool { pendingOffset == pending.count }

    /// The memory held for ciphertext the socket refused.
    @inlinable public var retainedBytes: Int { pending.isEmpty ? 0 : pending.capacity }

    /// Gives back the buffer of refused ciphertext; call only when `isEmpty`.
    public mutating func releaseBuffers() {
        pending = []
        pendingOffset = 0
    }
}
