import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet

/// The plain-HTTP listener of `--metrics`: `/metrics` (Prometheus text), `/healthz` and `/readyz`.
///
/// It runs on an event loop of its own, so that nothing a scraper does (or fails to do) reaches the memo port's
/// loops except the counters' read, which hops onto each loop as a task. It is small on purpose: GET only, one
/// request per connection (`Connection: close`), a request of at most 8 KiB, read within 5 seconds, at most
/// 32 connections at once. A connection past those makes room by closing the oldest (`ListenerState.evict`): when
/// the new one was refused instead, 32 connections that never finished a request held every health check off for
/// their 5 seconds, and one client reopening them kept `/healthz` failing, so that a supervisor restarted a
/// server that was fine.
final class MetricsListener: Sendable {
    static let maxConnections = 32
    static let maxRequestBytes = 8 * 1024
    static let readTimeout: Duration = .seconds(5)

    let boundAddress: SocketAddress
    private let loop: EventLoop
    private let state: LoopBound<ListenerState>

    /// What the listener's loop owns: the acceptor and the open connections.
    final class ListenerState {
        var acceptor: Acceptor?
        var connections: [ObjectIdentifier: MetricsConnection] = [:]
        /// How many connections were accepted, which numbers them in order.
        var accepted: UInt64 = 0

        /// Closes the connection that should make room for a new one: the oldest of those still waiting for their
        /// request (a slow or idle client's), or when every one is being answered, the oldest of those. A scraper's
        /// or a supervisor's request comes whole in its first packet, so it is answered long before 32 newer
        /// connections make it the oldest.
        func evict() {
            // Waiting before answering, then by age.
            let rank = { (connection: MetricsConnection) in (connection.answering ? 1 : 0, connection.number) }
            connections.values.min { rank($0) < rank($1) }?.close()
        }
    }

    /// Binds `address` and starts serving on a new loop.
    /// - Throws: `NetError` when the address cannot be parsed or bound.
    init(address: String, shared: ServerShared) throws(NetError) {
        let listener = try ListeningSocket.bind(try SocketAddress(parsing: address), backlog: 64)
        boundAddress = try listener.localAddress()
        let loop = try EventLoop.start(name: "memo-metrics")
        self.loop = loop
        let state = loop.runAndWait { LoopBound(ListenerState(), eventLoop: loop) }
        self.state = state
        do {
            try loop.runAndWait { () throws(NetError) in
                state.value.acceptor = try Acceptor(
                    listener: listener, eventLoop: loop,
                    onError: { error in
                        shared.log(
                            .error, "metrics_accept_failed", [("reason", error.message)],
                            "metrics: accept failed: \(error.message)")
                    },
                    onAccept: { accepted in
                        if state.value.connections.count >= Self.maxConnections { state.value.evict() }
                        state.value.accepted += 1
                        let connection = MetricsConnection(
                            socket: accepted.socket, number: state.value.accepted, state: state, shared: shared)
                        connection.start()
                    })
            }
        } catch {
            listener.close()
            loop.shutdownGracefully()
            throw error
        }
    }

    /// Stops accepting, closes every connection and stops the loop.
    func stop() {
        let state = self.state
        loop.runAndWait {
            state.value.acceptor?.stop()
            state.value.acceptor = nil
            for connection in Array(state.value.connections.values) { connection.close() }
        }
        loop.shutdownGracefully()
    }
}

/// One scraper's connection: reads one request, answers it, closes. Confined to the listener's loop.
final class MetricsConnection: EventHandler {
    /// Its place in the order of acceptance (`ListenerState.accepted`).
    let number: UInt64
    private let socket: TCPSocket
    private let state: LoopBound<MetricsListener.ListenerState>
    private let shared: ServerShared
    private var loop: EventLoop { state.eventLoop }
    private var registration: Registration?
    private var deadline: TimerHandle?
    private var request: [UInt8] = []
    private var response: [UInt8] = []
    private var written = 0
    /// The request is in (or refused): the answer is being made or written.
    private(set) var answering = false
    /// The whole answer is written (and our side shut).
    private var finished = false
    private var closed = false

    init(socket: TCPSocket, number: UInt64, state: LoopBound<MetricsListener.ListenerState>, shared: ServerShared) {
        self.number = number
        self.socket = socket
        self.state = state
        self.shared = shared
    }

    func start() {
        do {
            registration = try loop.register(fileDescriptor: socket.fileDescriptor, interest: .readable, handler: self)
        } catch {
            socket.close()
            return
        }
        state.value.connections[ObjectIdentifier(self)] = self
        let bound = LoopBound(self, eventLoop: loop)
        deadline = loop.schedule(after: MetricsListener.readTimeout) {
            let connection = bound.value
            // A scraper that has not finished its request by now (slowloris) is told so and dropped a second
            // later; one that is being answered, or has not closed after its answer, is dropped now.
            if connection.answering {
                connection.close()
                return
            }
            connection.respond(408, "request timeout\n")
            connection.deadline = connection.loop.schedule(after: .seconds(1)) { bound.value.close() }
        }
    }

    func readable() {
        guard !answering else {
            // Anything after the request (there should be nothing) is read and dropped; EOF ends it.
            drain()
            return
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let result: TCPSocket.ReadResult
            do {
                result = try chunk.withUnsafeMutableBytes { buffer throws(NetError) in try socket.read(into: buffer) }
            } catch {
                close()
                return
            }
            switch result {
            case .bytes(let count):
                request.append(contentsOf: chunk[..<count])
                let end = Self.headerEnd(request)
                if (end.map { $0 + 4 } ?? request.count) > MetricsListener.maxRequestBytes {
                    respond(431, "request header fields too large\n")
                    return
                }
                if let end {
                    handle(head: request[..<end])
                    return
                }
            case .wouldBlock:
                return
            case .eof:
                close()
                return
            }
        }
    }

    func writable() {
        flush()
    }

    func hangup() {
        close()
    }

    /// Where the blank line that ends the head is, if it has come.
    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func handle(head: ArraySlice<UInt8>) {
        let requestLine = head.prefix { $0 != 13 }
        let words = requestLine.split(separator: 32, omittingEmptySubsequences: true)
        guard words.count == 3, words[2].starts(with: Array("HTTP/1.".utf8)) else {
            respond(400, "bad request\n")
            return
        }
        guard words[0].elementsEqual("GET".utf8) else {
            respond(405, "only GET is served here\n", extraHeaders: "Allow: GET\r\n")
            return
        }
        let target = words[1].prefix { $0 != UInt8(ascii: "?") }
        switch String(decoding: target, as: UTF8.self) {
        case "/metrics":
            answering = true
            setInterest(.readable)
            let bound = LoopBound(self, eventLoop: loop)
            let shared = self.shared
            shared.gatherSnapshot { snapshot in
                let text = MetricsExposition.text(snapshot, shared: shared)
                bound.eventLoop.execute {
                    bound.value.respond(200, text, contentType: MetricsExposition.contentType)
                }
            }
        case "/healthz":
            respond(200, "ok\n")
        case "/readyz":
            switch shared.readiness {
            case .ready: respond(200, "ready\n")
            case .notReady(let reason): respond(503, "not ready: \(reason)\n")
            }
        default:
            respond(404, "not found: try /metrics, /healthz or /readyz\n")
        }
    }

    private func respond(
        _ status: Int, _ body: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = ""
    ) {
        guard !closed else { return }
        answering = true
        let reason: String
        switch status {
        case 200: reason = "OK"
        case 400: reason = "Bad Request"
        case 404: reason = "Not Found"
        case 405: reason = "Method Not Allowed"
        case 408: reason = "Request Timeout"
        case 431: reason = "Request Header Fields Too Large"
        case 503: reason = "Service Unavailable"
        default: reason = "Error"
        }
        let bodyBytes = Array(body.utf8)
        response = Array(("HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(bodyBytes.count)\r\nConnection: close\r\n\(extraHeaders)\r\n").utf8) + bodyBytes
        written = 0
        flush()
    }

    private func flush() {
        guard !closed, !finished, !response.isEmpty else { return }
        while written < response.count {
            let result: TCPSocket.WriteResult
            do {
                result = try response.withUnsafeBytes { buffer throws(NetError) in
                    try socket.write(UnsafeRawBufferPointer(rebasing: buffer[written...]))
                }
            } catch {
                close()
                return
            }
            switch result {
            case .wrote(let count): written += count
            case .wouldBlock:
                setInterest([.readable, .writable])
                return
            }
        }
        // Everything is written: say we are done, then read until the scraper closes too (closing with its bytes
        // unread would reset the connection, and could destroy the answer before the scraper reads it). The
        // deadline ends a scraper that never closes.
        finished = true
        try? socket.shutdownWrite()
        setInterest(.readable)
        drain()
    }

    /// Reads and drops what comes after the request; closes at the scraper's EOF once the answer is written.
    private func drain() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let result = try? chunk.withUnsafeMutableBytes { buffer throws(NetError) in try socket.read(into: buffer) }
            switch result {
            case .bytes: continue
            case .wouldBlock: return
            case .eof, nil:
                // Before the answer is written (a scraper that shut its sending side after the request), wait
                // for the answer without watching for reads.
                if finished { close() } else { setInterest(response.isEmpty ? .none : .writable) }
                return
            }
        }
    }

    private func setInterest(_ interest: Interest) {
        guard let registration else { return }
        try? loop.setInterest(interest, for: registration)
    }

    func close() {
        guard !closed else { return }
        closed = true
        deadline?.cancel()
        deadline = nil
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
        state.value.connections[ObjectIdentifier(self)] = nil
    }
}
