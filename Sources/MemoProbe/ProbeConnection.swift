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
    public let tls: TLSEngine
    private var decoder = FrameDecoder()
    private var stash: [Frame] = []
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var nextID: UInt32 = 1
    public private(set) var peerClosed = false
    public let timeout: Duration

    public convenience init(address: SocketAddress, identity: Identity, timeout: Duration = .seconds(10)) throws {
        let context = try TLSContext(.client(
            trustedCAPath: identity.ca, certificateChainPath: identity.certificate, privateKeyPath: identity.key))
        try self.init(address: address, context: context, timeout: timeout)
    }

    /// Connects with a TLS context of the caller's making (an old protocol version, a lowered security level).
    public init(address: SocketAddress, context: TLSContext, timeout: Duration = .seconds(10)) throws {
        self.timeout = timeout
        tls = try TLSEngine(context: context, serverName: "127.0.0.1")
        socket = try TCPSocket.connect(to: address, timeout: timeout)
        // Small frames go out at once; with Nagle's algorithm a handshake waits for delayed ACKs (40 ms).
        try? socket.setNoDelay()
        let deadline = ContinuousClock.now + timeout
        while try tls.handshake() != .done {
            try sendOutbound()
            try pump(until: deadline, what: "the TLS handshake")
        }
        try sendOutbound()
    }

    deinit {
        socket.close()
    }

    /// Sends hello and checks the welcome.
    @discardableResult
    public func hello() throws -> Message {
        let reply = try request(.hello(minVersion: 1, maxVersion: 1, client: "test"))
        guard case .welcome = reply else { throw Failure.timedOut("welcome, got \(reply)") }
        return reply
    }

    /// Sends `message` with a fresh request id and returns the id.
    @discardableResult
    public func send(_ message: Message, id: UInt32? = nil) throws -> UInt32 {
        let requestID = id ?? nextID
        nextID = max(nextID, requestID) + 1
        try sendRaw(message.frame(requestID: requestID))
        return requestID
    }

    /// Sends plaintext bytes as they are (for malformed frames).
    public func sendRaw(_ bytes: [UInt8]) throws {
        try tls.writePlaintext(bytes)
        try sendOutbound()
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
            return (frame, try Message(frame: frame))
        }
        while true {
            while let frame = try decoder.next() {
                if filter(frame) { return (frame, try Message(frame: frame)) }
                stash.append(frame)
            }
            if peerClosed { throw Failure.closed }
            try pump(until: deadline, what: "a frame")
        }
    }

    /// Waits until the server closes the connection; returns the frames that came before.
    public func readUntilClosed() throws -> [Message] {
        var messages = try stash.map { try Message(frame: $0) }
        stash.removeAll()
        let deadline = ContinuousClock.now + timeout
        while true {
            while let frame = try decoder.next() { messages.append(try Message(frame: frame)) }
            if peerClosed { return messages }
            do {
                try pump(until: deadline, what: "the server to close")
            } catch is TLSError {
                peerClosed = true
            }
        }
    }

    private func sendOutbound() throws {
        var out: [UInt8] = []
        tls.takeOutbound(into: &out)
        var offset = 0
        let deadline = ContinuousClock.now + timeout
        while offset < out.count {
            let result = try out.withUnsafeBytes { raw in
                try socket.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            switch result {
            case .wrote(let count): offset += count
            case .wouldBlock:
                guard try socket.wait(for: .writable, timeout: deadline - ContinuousClock.now) else {
                    throw Failure.timedOut("the socket to take our bytes")
                }
            }
        }
    }

    /// Reads what the socket has (waiting for it), feeds TLS and the decoder.
    private func pump(until deadline: ContinuousClock.Instant, what: String) throws {
        let left = deadline - ContinuousClock.now
        guard left > .zero, try socket.wait(for: .readable, timeout: left) else { throw Failure.timedOut(what) }
        let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
        switch result {
        case .bytes(let count):
            buffer.withUnsafeBytes { tls.feed(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        case .wouldBlock:
            return
        case .eof:
            peerClosed = true
        }
        if tls.isHandshakeComplete {
            var plaintext: [UInt8] = []
            let state = try tls.readPlaintext(into: &plaintext)
            decoder.append(plaintext)
            if state == .closed { peerClosed = true }
        }
        try sendOutbound()
    }
}
