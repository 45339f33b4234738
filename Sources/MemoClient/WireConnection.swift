import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

/// How a connection ended.
enum ConnectionEnd: Sendable {
    /// No TCP connection: refused, no route, reset during the handshake.
    case unreachable(String)
    /// The server's address is malformed or its name does not resolve.
    case unresolved(String)
    /// The attempt (TCP, TLS and hello) took longer than the connect timeout.
    case timedOut
    /// TLS failed: certificates refused on either side, or a record that did not verify (before or after the
    /// welcome).
    case tlsRefused(TLSError)
    /// The server refused the conversation before welcoming us (`error` or `going-away` in place of `welcome`).
    case rejected(ErrorCode, String)
    /// The connection was lost after the welcome (end of stream, reset, broken TLS, protocol violation).
    case lost(String)
    /// We closed it.
    case closedByClient
}

/// What the server said in `welcome`.
struct Welcome: Sendable {
    var revision: UInt64
    var maxFrameSize: UInt32
    var role: Role
    var serverName: String
}

/// One TCP connection carrying TLS carrying frames, driven by an event loop: connect, TLS handshake, `hello`,
/// then frames both ways until it ends. It knows nothing of requests; its owner does.
///
/// Confined to `loop`: it is made, used and ended on that loop's thread only, which is why it needs no locks.
/// `@unchecked Sendable` only so that work it schedules on its own loop may capture it.
final class WireConnection: EventHandler, @unchecked Sendable {
    private enum Phase {
        case connecting, handshaking, awaitingWelcome, ready, closed
    }

    /// The request id of `hello`; no other request is sent before `welcome` answers it.
    static let helloRequestID: UInt32 = 1
    /// Frames from the server may be as large as its limit; this is ours, checked before allocating.
    static let receiveLimit = 16 << 20
    /// How long a server that said going-away may take to close.
    static let goingAwayGrace: Duration = .seconds(10)

    let loop: EventLoop
    private let address: SocketAddress
    private let engine: TLSEngine
    private let clientName: String
    private var socket: TCPSocket?
    private var registration: Registration?
    private var phase = Phase.connecting
    private var decoder = FrameDecoder(maxFrameSize: WireConnection.receiveLimit)
    private var pump = TLSPump()
    private var plaintext: [UInt8] = []
    private var connectTimer: TimerHandle?
    /// Where reads land before the TLS engine takes them: one buffer for the connection's life, since allocating
    /// and freeing 64 KiB on every readable event was the largest allocation a request-response client made.
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// The server sent `going-away`: nothing new may be sent, but answers still come until it closes.
    private(set) var goingAway = false

    var onWelcome: ((Welcome) -> Void)?
    /// Every frame after the welcome, a whole read's worth at a time (so the mirror can apply them as a batch).
    var onFrames: (([Frame]) -> Void)?
    var onGoingAway: ((ErrorCode, String) -> Void)?
    /// Called exactly once.
    var onEnd: ((ConnectionEnd) -> Void)?

    init(loop: EventLoop, address: SocketAddress, engine: TLSEngine, clientName: String) {
        self.loop = loop
        self.address = address
        self.engine = engine
        self.clientName = clientName
    }

    deinit {
        readBuffer.deallocate()
    }

    var isReady: Bool { phase == .ready && !goingAway }

    /// Starts connecting; the outcome comes through the callbacks, never from inside this call.
    func start(timeout: Duration) {
        connectTimer = loop.schedule(after: timeout) { [weak self] in
            guard let self, self.phase != .ready, self.phase != .closed else { return }
            self.end(.timedOut)
        }
        do throws(NetError) {
            let (socket, state) = try TCPSocket.startConnect(to: address)
            self.socket = socket
            try? socket.setNoDelay()
            registration = try loop.register(
                fileDescriptor: socket.fileDescriptor, interest: state == .connected ? .readable : .writable,
                handler: self)
            if state == .connected {
                loop.execute { [self] in self.connected() }
            }
        } catch {
            loop.execute { [self] in self.end(.unreachable(error.message.lowercasedFirst)) }
        }
    }

    /// Queues one frame's bytes (only once ready).
    func send(_ frame: [UInt8]) {
        guard phase == .ready || phase == .awaitingWelcome else { return }
        do throws(TLSError) {
            try engine.writePlaintext(frame)
        } catch {
            end(.tlsRefused(error))
            return
        }
        flush()
    }

    /// Closes politely (close_notify) and reports `reason` (by default `closedByClient`).
    func close(as reason: ConnectionEnd = .closedByClient) {
        guard phase != .closed else { return }
        if engine.isHandshakeComplete {
            engine.shutdown()
            flush()
        }
        end(reason)
    }

    // MARK: - Event handler

    func readable() {
        guard let socket, phase != .closed, phase != .connecting else { return }
        var sawEnd = false
        var readError: NetError?
        var total = 0
        let buffer = readBuffer
        reading: while total < 4 << 20 {
            do throws(NetError) {
                switch try TLSPump.read(from: socket, into: buffer, feeding: engine) {
                case .bytes(let count):
                    total += count
                case .wouldBlock:
                    break reading
                case .eof:
                    sawEnd = true
                    break reading
                }
            } catch {
                readError = error
                break reading
            }
        }
        process()
        guard phase != .closed else { return }
        if let readError {
            let reason = readError.message.lowercasedFirst
            end(phase == .ready ? .lost(reason) : .unreachable(reason))
        } else if sawEnd {
            end(phase == .ready ? .lost("the server closed the connection")
                : .unreachable("the server closed the connection during the handshake"))
        }
    }

    func writable() {
        guard let socket, phase != .closed else { return }
        if phase == .connecting {
            do throws(NetError) {
                try socket.finishConnect()
            } catch {
                end(.unreachable(error.message.lowercasedFirst))
                return
            }
            connected()
            return
        }
        flush()
    }

    func hangup() {
        guard phase != .closed else { return }
        // Read what is left: an alert or a going-away may explain the hang-up.
        readable()
        if phase != .closed { end(phase == .ready ? .lost("connection hung up") : .unreachable("connection hung up")) }
    }

    // MARK: - Steps

    private func connected() {
        guard phase == .connecting else { return }
        phase = .handshaking
        setInterest(.readable)
        process()
    }

    /// Drives the handshake and decodes whatever plaintext the engine has.
    private func process() {
        do throws(TLSError) {
            if phase == .handshaking {
                guard try engine.handshake() == .done else {
                    flush()
                    return
                }
                phase = .awaitingWelcome
                try engine.writePlaintext(
                    Message.hello(
                        minVersion: WireProtocol.version, maxVersion: WireProtocol.version, client: clientName
                    ).frame(requestID: Self.helloRequestID))
            }
            plaintext.removeAll(keepingCapacity: true)
            let result = try engine.readPlaintext(into: &plaintext)
            if !plaintext.isEmpty { decoder.append(plaintext) }
            decodeFrames()
            // close_notify may come in the same read as the last frames (the result then counts the bytes).
            if result == .closed || engine.peerClosed, phase != .closed {
                // Answer the server's close_notify with ours (RFC 8446 §6.1) before the socket closes.
                engine.shutdown()
                flush()
                end(phase == .ready ? .lost("the server closed the connection") : .rejected(.shuttingDown, "closed"))
            }
        } catch {
            flush()  // our alert, if any, should still reach the server
            // Before or after the welcome alike: a TLS failure is reported as one (exit 5, with its reason), not
            // as a lost connection to be retried at once.
            end(.tlsRefused(error))
            return
        }
        flush()
    }

    private func decodeFrames() {
        var batch: [Frame] = []
        while phase != .closed {
            let frame: Frame
            do throws(WireError) {
                guard let next = try decoder.next() else { break }
                frame = next
            } catch {
                end(.lost("bad frame from the server: \(error)"))
                return
            }
            if phase == .awaitingWelcome {
                handleFirst(frame)
                continue
            }
            if frame.type == Message.Kind.goingAway.rawValue, frame.requestID == 0,
               case .goingAway(let code, let message)? = try? Message(frame: frame) {
                goingAway = true
                onGoingAway?(code, message)
                // The server closes once its writes in flight are answered; do not wait for ever if it does not.
                loop.schedule(after: Self.goingAwayGrace) { [weak self] in
                    self?.close(as: .lost("the server went away (\(code.name)) and did not close"))
                }
                continue
            }
            batch.append(frame)
        }
        if !batch.isEmpty, phase == .ready { onFrames?(batch) }
    }

    private func handleFirst(_ frame: Frame) {
        let message: Message
        do throws(WireError) {
            message = try Message(frame: frame)
        } catch {
            end(.lost("bad frame from the server: \(error)"))
            return
        }
        switch message {
        case .welcome(_, let revision, let maxFrameSize, let role, let server):
            phase = .ready
            connectTimer?.cancel()
            connectTimer = nil
            onWelcome?(Welcome(revision: revision, maxFrameSize: maxFrameSize, role: role, serverName: server))
        case .error(let code, let text), .goingAway(let code, let text):
            end(.rejected(code, text))
        default:
            end(.lost("the server answered hello with \(message.kind)"))
        }
    }

    private func flush() {
        guard let socket, phase != .closed else { return }
        // The read buffer lends itself as scratch: every read is fed to the engine before anything is flushed.
        let result: TLSPump.FlushResult
        do throws(NetError) {
            result = try pump.flush(engine, to: socket, scratch: readBuffer)
        } catch {
            let reason = error.message.lowercasedFirst
            end(phase == .ready ? .lost(reason) : .unreachable(reason))
            return
        }
        setInterest(result == .blocked ? [.readable, .writable] : .readable)
    }

    private func setInterest(_ interest: Interest) {
        guard let registration else { return }
        try? loop.setInterest(interest, for: registration)
    }

    private func end(_ reason: ConnectionEnd) {
        guard phase != .closed else { return }
        phase = .closed
        connectTimer?.cancel()
        connectTimer = nil
        if let registration { loop.deregister(registration) }
        registration = nil
        socket?.close()
        socket = nil
        let onEnd = self.onEnd
        self.onEnd = nil
        onWelcome = nil
        onFrames = nil
        onGoingAway = nil
        onEnd?(reason)
    }
}

extension String {
    /// "Connection refused" becomes "connection refused", for messages that continue a sentence.
    var lowercasedFirst: String {
        guard let first else { return self }
        return first.lowercased() + dropFirst()
    }
}
