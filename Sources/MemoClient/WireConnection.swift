import Glibc
import MemoNet
import MemoTLS
import MemoTransport
import MemoWire

/// One TCP connection carrying TLS carrying frames, driven by an event loop: connect, TLS handshake, then frames
/// both ways until it ends. It drives a `FramedTLSTransport` (TLS, the frame decoder, the pump), as the server's
/// connections and the probe do, and waits for its socket through the loop. It moves bytes only: what the frames
/// mean, the hello and welcome, deadlines and going-away belong to `ClientConnectionMachine` and `RequestTable`,
/// which `ConnectionOwner` feeds with these callbacks.
///
/// Confined to `loop`: it is made, used and ended on that loop's thread only, which is why it needs no locks.
/// `@unchecked Sendable` only so that work it schedules on its own loop may capture it.
final class WireConnection: EventHandler, @unchecked Sendable {
    private enum Phase {
        case connecting, handshaking, open, closed
    }

    /// Frames from the server may be as large as its limit; this is ours, checked before allocating.
    static let receiveLimit = 16 << 20

    let loop: EventLoop
    private let address: SocketAddress
    /// TLS, the frame decoder and the pump: the same transport the server's connections and the probe drive.
    private var transport: FramedTLSTransport
    /// The transport's engine, held here too: a `let`, so a call on it needs no retain of the transport's parts.
    private let engine: TLSEngine
    private var socket: TCPSocket?
    private var registration: Registration?
    private var phase = Phase.connecting
    /// Plaintext lent to the transport on each advance, kept so that its capacity is reused.
    private var plaintext: [UInt8] = []
    /// Where reads land before the TLS engine takes them: one buffer for the connection's life, since allocating
    /// and freeing 64 KiB on every readable event was the largest allocation a request-response client made.
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// TCP is connected.
    var onConnected: (() -> Void)?
    /// The TLS handshake is done; frames may be sent.
    var onHandshakeDone: (() -> Void)?
    /// Every frame, a whole read's worth at a time (so the mirror can apply them as a batch).
    var onFrames: (([Frame]) -> Void)?
    /// A new TLS session to save (the server's ticket, read with the first answer); nil: tickets are not looked
    /// for.
    var onSession: (([UInt8]) -> Void)?
    /// Called at most once, when the connection ends by itself (never after `close`).
    var onEnd: ((TransportEnd) -> Void)?

    init(loop: EventLoop, address: SocketAddress, engine: TLSEngine) {
        self.loop = loop
        self.address = address
        self.engine = engine
        transport = FramedTLSTransport(tls: engine, maxFrameSize: WireConnection.receiveLimit)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Starts connecting; the outcome comes through the callbacks, never from inside this call.
    func start() {
        do throws(NetError) {
            let (socket, state) = try TCPSocket.startConnect(to: address)
            // Both are tuning, and nothing is lost without them: without TCP_NODELAY small frames may wait up to a
            // round trip; without the kernel's dead-peer detection the keepalive ping still finds a dead server.
            try? socket.setNoDelay()
            // A server host that died or a network cut is found by the kernel; a stopped server process, which
            // still acknowledges, by the keepalive ping (`ClientConnectionMachine`).
            try? socket.detectDeadPeer()
            start(on: socket, connected: state == .connected)
        } catch {
            loop.execute { [self] in self.end(.io(error.message.lowercasedFirst)) }
        }
    }

    /// Starts on a socket already made (connected, or with its connect under way): `start()`'s second half, and
    /// how tests drive a connection over an embedded socket (`TCPSocket.embedded()`).
    func start(on socket: TCPSocket, connected: Bool) {
        self.socket = socket
        do throws(NetError) {
            registration = try loop.register(
                socket: socket, interest: connected ? .readable : .writable, handler: self)
        } catch {
            loop.execute { [self] in self.end(.io(error.message.lowercasedFirst)) }
            return
        }
        if connected {
            loop.execute { [self] in self.connected() }
        }
    }

    /// Queues one frame's bytes (only once the handshake is done).
    func send(_ frame: [UInt8]) {
        guard phase == .open else { return }
        do throws(TLSError) {
            try transport.write(frame)
        } catch {
            end(.tls(error))
            return
        }
        flush()
    }

    /// Closes without reporting an end: politely (close_notify) when `polite` and the handshake is done.
    func close(polite: Bool) {
        guard phase != .closed else { return }
        clearCallbacks()
        if polite, engine.isHandshakeComplete {
            transport.closeNotify()
            flush()
        }
        release()
    }

    // MARK: - Event handler

    func readable() {
        guard let socket, phase != .closed, phase != .connecting else { return }
        var readEnd = FramedTLSTransport.ReadEnd.drained
        var readError: NetError?
        do throws(NetError) {
            // At most 4 MiB per wake-up; level-triggered epoll reports the rest.
            readEnd = try transport.read(from: socket, through: readBuffer, budget: 4 << 20)
            // The transport's read stops at a short read. One more sees an end of stream right behind the last
            // bytes (a server that answers, then goes), so that the end is taken in this wake-up, before any work
            // queued meanwhile (a request to send) runs on a connection already gone: the read that says EAGAIN,
            // which the client has always made.
            if readEnd == .drained { readEnd = try transport.read(from: socket, through: readBuffer, budget: 4 << 20) }
        } catch {
            readError = error
        }
        withExtendedLifetime(self) { process() }
        guard phase != .closed else { return }
        if let readError {
            end(.io(readError.message.lowercasedFirst))
        } else if readEnd == .endOfFile {
            end(.endOfStream)
        }
    }

    func writable() {
        guard let socket, phase != .closed else { return }
        if phase == .connecting {
            do throws(NetError) {
                try socket.finishConnect()
            } catch {
                end(.io(error.message.lowercasedFirst))
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
        if phase != .closed { end(.hangUp) }
    }

    // MARK: - Steps

    private func connected() {
        guard phase == .connecting else { return }
        if let socket, socket.isConnectedToItself {
            // Nobody listens on that port (a stopped server's, in the ephemeral range): the connect met itself.
            // Refused, as it is: TLS would fail on our own hello and wait the refused delay for nothing.
            end(.io(NetError(errno: ECONNREFUSED, operation: "connect(\(address))").message.lowercasedFirst))
            return
        }
        phase = .handshaking
        setInterest(.readable)
        onConnected?()
        process()
    }

    /// Drives the handshake and decodes whatever plaintext the engine has.
    private func process() {
        let inbound = transport.advance(scratch: &plaintext)
        switch inbound {
        case .handshaking:
            break
        case .handshakeCompleted:
            phase = .open
            onHandshakeDone?()
            // The handshake's callback may have closed the connection; else read what followed the handshake.
            guard phase == .open else { return }
            process()
            return
        case .delivered(let closeNotify):
            // Saved before the frames are handled: their answer may end the command.
            if let onSession, let session = engine.takeNewSession() { onSession(session) }
            decodeFrames()
            if closeNotify, phase != .closed {
                // Answer the server's close_notify with ours (RFC 8446 §6.1) before the socket closes.
                transport.closeNotify()
                flush()
                end(.closeNotify)
            }
        case .failed(let error, _):
            flush()  // our alert, if any, should still reach the server
            end(.tls(error))
            return
        }
        flush()
    }

    private func decodeFrames() {
        var batch: [Frame] = []
        var failure: WireError?
        while true {
            do throws(WireError) {
                guard let next = try transport.frames.next() else { break }
                batch.append(next)
            } catch {
                failure = error
                break
            }
        }
        if !batch.isEmpty { onFrames?(batch) }
        if let failure, phase != .closed { end(.badFrame("\(failure)")) }
    }

    private func flush() {
        guard let socket, phase != .closed else { return }
        // The read buffer lends itself as scratch: every read is fed to the engine before anything is flushed.
        let result: TLSPump.FlushResult
        do throws(NetError) {
            result = try transport.flush(to: socket, scratch: readBuffer)
        } catch {
            end(.io(error.message.lowercasedFirst))
            return
        }
        setInterest(result == .blocked ? [.readable, .writable] : .readable)
    }

    /// Changes what the loop watches the socket for. A change the kernel refuses would leave the connection
    /// waiting for an event that never comes (a flush never finished, a reply never read): it ends the connection
    /// with the reason instead, so that requests fail and the machine reconnects.
    private func setInterest(_ interest: Interest) {
        guard let registration else { return }
        do throws(NetError) {
            try loop.setInterest(interest, for: registration)
        } catch {
            end(.io("watching the socket failed: " + error.message.lowercasedFirst))
        }
    }

    private func end(_ reason: TransportEnd) {
        guard phase != .closed else { return }
        let onEnd = self.onEnd
        clearCallbacks()
        release()
        onEnd?(reason)
    }

    private func clearCallbacks() {
        onEnd = nil
        onConnected = nil
        onHandshakeDone = nil
        onFrames = nil
        onSession = nil
    }

    private func release() {
        phase = .closed
        if let registration { loop.deregister(registration) }
        registration = nil
        socket?.close()
        socket = nil
        // The session's keys go with the connection, not when the last reference to this object does.
        engine.discard()
    }
}

extension String {
    /// "Connection refused" becomes "connection refused", for messages that continue a sentence.
    var lowercasedFirst: String {
        guard let first else { return self }
        return first.lowercased() + dropFirst()
    }
}
