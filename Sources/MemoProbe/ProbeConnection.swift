import Foundation
import MemoNet
import MemoTLS
import MemoWire

/// A blocking client speaking the wire protocol over TLS, with a deadline on every wait: for tests, benchmarks
/// and the hostile-peer catalog, where the caller wants every frame in its hands (the application client with
/// its mirror is `MemoClient`).
public final class ProbeConnection {
    /// The CA to verify the server with, and the client's certificate and key (none: no client certificate).
    public struct Identity: Sendable {
        public var ca: String
        public var certificate: String?
        public var key: String?

        public init(ca: String, certificate: String? = nil, key: String? = nil) {
            self.ca = ca
            self.certificate = certificate
            self.key = key
        }
    }

    public typealias Failure = TLSStream.Failure

    public let stream: TLSStream
    public var socket: TCPSocket { stream.socket }
    public var tls: TLSEngine { stream.tls }
    public var timeout: Duration { stream.timeout }
    public private(set) var peerClosed = false
    private var decoder = FrameDecoder()
    private var stash: [Frame] = []
    /// Kept between reads by `readAvailable(_:)`.
    private var plaintext: [UInt8] = []
    private var nextID: UInt32 = 1
    /// The protocol version the server's welcome agreed (1 until then): how frames are encoded and decoded.
    public private(set) var version: UInt16 = 1

    /// A client TLS context for `identity`; share one among many connections (loading certificates is slow).
    public static func context(for identity: Identity) throws -> TLSContext {
        try TLSContext(.client(
            trustedCAPath: identity.ca, certificateChainPath: identity.certificate, privateKeyPath: identity.key))
    }

    public convenience init(address: SocketAddress, identity: Identity, timeout: Duration = .seconds(10)) throws {
        try self.init(address: address, context: Self.context(for: identity), timeout: timeout)
    }

    /// Connects and completes the TLS handshake (not hello).
    public init(address: SocketAddress, context: TLSContext, timeout: Duration = .seconds(10)) throws {
        stream = try TLSStream(address: address, context: context, timeout: timeout)
    }

    /// Sends hello (offering versions 1 to `version`) and checks the welcome.
    @discardableResult
    public func hello(version: UInt16 = 1) throws -> Message {
        let reply = try request(.hello(minVersion: 1, maxVersion: version, client: "probe"))
        guard case .welcome = reply else { throw Failure.timedOut("welcome, got \(reply)") }
        return reply
    }

    /// Decodes a frame as the agreed version writes it; a welcome sets the version.
    private func decode(_ frame: Frame) throws -> Message {
        let message = try Message(frame: frame, version: version)
        if case .welcome(let agreed, _, _, _, _) = message { version = agreed }
        return message
    }

    /// Sends `message` with a fresh request id and returns the id.
    @discardableResult
    public func send(_ message: Message, id: UInt32? = nil) throws -> UInt32 {
        let requestID = id ?? nextID
        nextID = max(nextID, requestID) + 1
        try sendRaw(message.frame(requestID: requestID, version: version))
        return requestID
    }

    /// Sends plaintext bytes as they are (for malformed frames).
    public func sendRaw(_ bytes: [UInt8]) throws {
        try stream.write(bytes)
    }

    /// Sends `message` and waits for the first frame with its request id.
    public func request(_ message: Message) throws -> Message {
        let id = try send(message)
        return try receive { $0.requestID == id }.1
    }

    /// The next frame that matches `filter`; the others are kept, in order, for later calls.
    public func receive(_ filter: (Frame) -> Bool = { _ in true }) throws -> (Frame, Message) {
        let deadline = ContinuousClock.now + timeout
        if let index = stash.firstIndex(where: filter) {
            let frame = stash.remove(at: index)
            return (frame, try decode(frame))
        }
        while true {
            while let frame = try decoder.next() {
                if filter(frame) { return (frame, try decode(frame)) }
                stash.append(frame)
            }
            if peerClosed { throw Failure.closed }
            try take(try stream.read(until: deadline, what: "a frame"))
        }
    }

    /// Reads what the socket holds now, without waiting; for callers multiplexing many connections with poll.
    /// - Returns: the frames that are complete, in order.
    public func readAvailable() throws -> [Frame] {
        var frames = stash
        stash.removeAll()
        try take(try stream.readAvailable())
        while let frame = try decoder.next() { frames.append(frame) }
        return frames
    }

    /// Reads what the socket holds now, without waiting, and hands each complete frame to `body` in order: its
    /// type, its request id and a reader over its payload where it lies in the decoder's buffer (for benchmarks
    /// reading many small frames: no array per read, per frame or per payload). `body` must not keep the reader.
    public func readAvailable(_ body: (_ type: UInt8, _ requestID: UInt32, _ payload: inout WireReader) throws -> Void)
        throws
    {
        for frame in stash {
            var payload = WireReader(frame.payload)
            try body(frame.type, frame.requestID, &payload)
        }
        stash.removeAll()
        try stream.readAvailable(appendingTo: &plaintext)
        try take(plaintext)
        plaintext.removeAll(keepingCapacity: true)
        while let (type, requestID, payload) = try decoder.nextPayload() {
            var reader = payload
            try body(type, requestID, &reader)
        }
    }

    /// Waits until the server closes the connection; returns the frames that came before.
    public func readUntilClosed() throws -> [Message] {
        var messages = try stash.map { try decode($0) }
        stash.removeAll()
        let deadline = ContinuousClock.now + timeout
        while true {
            while let frame = try decoder.next() { messages.append(try decode(frame)) }
            if peerClosed { return messages }
            do {
                try take(try stream.read(until: deadline, what: "the server to close"))
            } catch is TLSError {
                peerClosed = true
            } catch let error as NetError where error.isConnectionLoss {
                peerClosed = true
            }
        }
    }

    private func take(_ plaintext: [UInt8]) throws {
        // As raw bytes: the generic `append` of a sequence cost memo-bench ~1,000 instructions per answer read.
        plaintext.withUnsafeBytes { decoder.append($0) }
        if stream.peerClosed { peerClosed = true }
    }
}
