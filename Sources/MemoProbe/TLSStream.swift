import Foundation
import MemoNet
import MemoTLS
import MemoTransport

/// A blocking TLS byte stream over a non-blocking socket, with a deadline on every wait: the transport of the
/// probe client and of the benchmarks' Redis client. It drives a `FramedTLSTransport` (the server's connections
/// drive the same one), waiting in `poll` where they wait for epoll.
public final class TLSStream {
    public enum Failure: Error, CustomStringConvertible {
        case timedOut(String)
        case closed
        public var description: String {
            switch self {
            case .timedOut(let what): return "timed out waiting for \(what)"
            case .closed: return "connection closed"
            }
        }
    }

    public let socket: TCPSocket
    public var tls: TLSEngine { transport.tls }
    public let timeout: Duration
    public private(set) var peerClosed = false
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var transport: FramedTLSTransport

    /// Connects and completes the TLS handshake.
    public init(address: SocketAddress, context: TLSContext, timeout: Duration = .seconds(10)) throws {
        self.timeout = timeout
        transport = FramedTLSTransport(tls: try TLSEngine(context: context, serverName: address.host))
        socket = try TCPSocket.connect(to: address, timeout: timeout)
        // Small writes go out at once; with Nagle's algorithm a handshake waits for delayed ACKs (40 ms).
        try? socket.setNoDelay()
        let deadline = ContinuousClock.now + timeout
        var none: [UInt8] = []
        handshake: while true {
            switch transport.advance(appendingTo: &none) {
            case .handshakeCompleted: break handshake
            case .failed(let error, _): throw error
            case .handshaking, .delivered: break
            }
            try flush()
            try wait(until: deadline, what: "the TLS handshake")
            try readSocket()
        }
        try flush()
    }

    deinit {
        socket.close()
    }

    /// Encrypts and sends `bytes`, waiting for the socket when it is full.
    public func write(_ bytes: [UInt8]) throws {
        try transport.write(bytes)
        try flush()
    }

    private func flush() throws {
        // Read from the clock only once the socket refuses bytes (rarely): a flush after every read and write
        // read it for nothing.
        var deadline: ContinuousClock.Instant?
        // The read buffer lends itself as scratch: what a read brings is fed to TLS before anything is flushed.
        while try buffer.withUnsafeMutableBytes({ try transport.flush(to: socket, scratch: $0) }) == .blocked {
            let end = deadline ?? ContinuousClock.now + timeout
            deadline = end
            guard try socket.wait(for: .writable, timeout: end - ContinuousClock.now) else {
                throw Failure.timedOut("the socket to take our bytes")
            }
        }
    }

    private func wait(until deadline: ContinuousClock.Instant, what: String) throws {
        let left = deadline - ContinuousClock.now
        guard left > .zero, try socket.wait(for: .readable, timeout: left) else { throw Failure.timedOut(what) }
    }

    /// Feeds TLS what the socket holds (one read's worth); notes the end of stream.
    private func readSocket() throws {
        let end = try buffer.withUnsafeMutableBytes { try transport.read(from: socket, through: $0, budget: 1) }
        if end == .endOfFile { peerClosed = true }
    }

    /// Waits for the socket, then returns the plaintext that one read brought (maybe none: a partial record).
    /// - Throws: `timedOut` past the deadline; TLS errors as `TLSError`.
    public func read(until deadline: ContinuousClock.Instant, what: String) throws -> [UInt8] {
        try wait(until: deadline, what: what)
        return try readAvailable()
    }

    /// Returns the plaintext that the socket holds now, without waiting.
    public func readAvailable() throws -> [UInt8] {
        var plaintext: [UInt8] = []
        try readAvailable(appendingTo: &plaintext)
        return plaintext
    }

    /// Appends the plaintext that the socket holds now to `plaintext`, without waiting (a caller reading many
    /// small records keeps one array rather than receiving a new one per read).
    public func readAvailable(appendingTo plaintext: inout [UInt8]) throws {
        try readSocket()
        if tls.isHandshakeComplete {
            switch transport.advance(appendingTo: &plaintext) {
            case .delivered(let closeNotify): if closeNotify { peerClosed = true }
            case .failed(let error, _): throw error
            case .handshaking, .handshakeCompleted: break
            }
        }
        try flush()  // TLS may answer the peer (key updates, alerts)
    }
}
