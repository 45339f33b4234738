import Foundation
import Testing

@testable import MemoNet

@Suite("Net: echo server on an event loop group")
struct NetEchoTests {
    @Test("concurrent clients each get their own bytes echoed back", arguments: [
        ("127.0.0.1", 200, 48 * 1024),
        ("[::1]", 50, 16 * 1024),
    ])
    func echo(host: String, clients: Int, messageSize: Int) throws {
        try runEcho(host: host, clients: clients, messageSize: messageSize, keepOpen: false)
    }

    /// Set MEMO_NET_STRESS to a connection count (9000 fits a 20,000-descriptor limit: client and server ends
    /// live in this one process) to check that that many connections are echoed while all stay open.
    @Test("thousands of connections stay open at once and are all served",
          .enabled(if: ProcessInfo.processInfo.environment["MEMO_NET_STRESS"] != nil))
    func manyOpenConnections() throws {
        let count = Int(ProcessInfo.processInfo.environment["MEMO_NET_STRESS"] ?? "") ?? 9000
        try runEcho(host: "127.0.0.1", clients: count, messageSize: 256, keepOpen: true)
    }

    private func runEcho(host: String, clients: Int, messageSize: Int, keepOpen: Bool) throws {
        let group = try EventLoopGroup(threads: 2, name: "net-echo")
        defer { group.shutdownGracefully() }
        let listener = try ListeningSocket.bind(SocketAddress(parsing: "\(host):0"), backlog: 512)
        let address = try listener.localAddress()
        #expect(address.port != 0)

        let acceptErrors = NetBox<[String]>([])
        let serverLoops = NetBox<Set<String>>([])
        let acceptorReady = NetSignal()
        let acceptLoop = group.loops[0]
        acceptLoop.execute {
            do {
                _ = try Acceptor(
                    listener: listener,
                    eventLoop: acceptLoop,
                    onError: { error in acceptErrors.update { $0.append(error.description) } },
                    onAccept: { accepted in
                        let loop = group.next()
                        let socket = accepted.socket
                        loop.execute {
                            serverLoops.update { _ = $0.insert(loop.name) }
                            EchoConnection.start(socket: socket, loop: loop)
                        }
                    }
                )
            } catch {
                acceptErrors.update { $0.append("\(error)") }
            }
            acceptorReady.signal()
        }
        acceptorReady.wait()

        let results = NetBox<[Int: String]>([:])
        let finished = NetSignal()
        for index in 0..<clients {
            let loop = group.next()
            loop.execute {
                EchoClient.start(
                    to: address, message: netPattern(count: messageSize, seed: index), keepOpen: keepOpen, loop: loop
                ) { outcome in
                    results.update { $0[index] = outcome }
                    finished.signal()
                }
            }
        }
        finished.wait(count: clients, seconds: keepOpen ? 300 : 60)
        let outcomes = results.value
        #expect(outcomes.count == clients)
        #expect(outcomes.values.allSatisfy { $0 == "ok" }, "\(outcomes.filter { $0.value != "ok" }.prefix(5))")
        #expect(acceptErrors.value.isEmpty)
        #expect(serverLoops.value.count == 2, "accepted connections are spread over both loops")
        if keepOpen {
            let open = NetBox(0)
            let counted = NetSignal()
            for loop in group.loops {
                loop.execute {
                    open.update { $0 += loop.registrationCount }
                    counted.signal()
                }
            }
            counted.wait(count: group.loops.count)
            // Every client and every server end, plus the listener.
            #expect(open.value == 2 * clients + 1)
        }
    }
}

/// The server side: echoes what it reads. When the peer does not keep up it stops reading until its pending
/// bytes are flushed. Touched only on its loop's thread.
private final class EchoConnection: EventHandler {
    private let socket: TCPSocket
    private let loop: EventLoop
    private var registration: Registration?
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var pending: [UInt8] = []

    static func start(socket: TCPSocket, loop: EventLoop) {
        let connection = EchoConnection(socket: socket, loop: loop)
        do {
            try socket.setNoDelay()
            connection.registration = try loop.register(
                fileDescriptor: socket.fileDescriptor, interest: .readable, handler: connection
            )
        } catch {
            socket.close()
        }
    }

    private init(socket: TCPSocket, loop: EventLoop) {
        self.socket = socket
        self.loop = loop
    }

    func readable() {
        do {
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch result {
            case .wouldBlock: return
            case .eof: close()
            case .bytes(let count):
                pending.append(contentsOf: buffer.prefix(count))
                try flush()
            }
        } catch {
            close()
        }
    }

    func writable() {
        do { try flush() } catch { close() }
    }

    func hangup() {
        close()
    }

    private func flush() throws {
        while !pending.isEmpty {
            let result = try pending.withUnsafeBytes { try socket.write($0) }
            guard case .wrote(let count) = result else { break }
            pending.removeFirst(count)
        }
        if let registration {
            try loop.setInterest(pending.isEmpty ? .readable : .writable, for: registration)
        }
    }

    private func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
    }
}

/// A client: connects without blocking, writes its message while reading the echo, and reports "ok" or what
/// went wrong. Touched only on its loop's thread.
private final class EchoClient: EventHandler {
    private let socket: TCPSocket
    private let loop: EventLoop
    private let message: [UInt8]
    private let report: (String) -> Void
    private let keepOpen: Bool
    private var reported = false
    private var registration: Registration?
    private var connected = false
    private var sent = 0
    private var received: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)

    static func start(
        to address: SocketAddress,
        message: [UInt8],
        keepOpen: Bool,
        loop: EventLoop,
        report: @escaping (String) -> Void
    ) {
        do {
            let (socket, state) = try TCPSocket.startConnect(to: address)
            let client = EchoClient(socket: socket, loop: loop, message: message, keepOpen: keepOpen, report: report)
            client.connected = state == .connected
            client.registration = try loop.register(
                fileDescriptor: socket.fileDescriptor, interest: .all, handler: client
            )
        } catch {
            report("start: \(error)")
        }
    }

    private init(
        socket: TCPSocket, loop: EventLoop, message: [UInt8], keepOpen: Bool, report: @escaping (String) -> Void
    ) {
        self.socket = socket
        self.loop = loop
        self.message = message
        self.keepOpen = keepOpen
        self.report = report
    }

    func writable() {
        do {
            if !connected {
                try socket.finishConnect()
                connected = true
            }
            while sent < message.count {
                let result = try message[sent...].withUnsafeBytes { try socket.write($0) }
                guard case .wrote(let count) = result else { return }
                sent += count
            }
            if let registration { try loop.setInterest(.readable, for: registration) }
        } catch {
            finish("write: \(error)")
        }
    }

    func readable() {
        guard connected else { return }
        do {
            switch try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) {
            case .wouldBlock: return
            case .eof: finish("eof after \(received.count) of \(message.count) bytes")
            case .bytes(let count):
                received.append(contentsOf: buffer.prefix(count))
                if received.count >= message.count {
                    finish(received == message ? "ok" : "echo differs from message")
                }
            }
        } catch {
            finish("read: \(error)")
        }
    }

    func hangup() {
        finish("hangup after \(received.count) bytes")
    }

    /// Reports once; with `keepOpen` a successful client stays connected until the loop shuts down.
    private func finish(_ outcome: String) {
        if !reported {
            reported = true
            report(outcome)
        }
        guard let registration, !(keepOpen && outcome == "ok") else { return }
        loop.deregister(registration)
        self.registration = nil
        socket.close()
    }
}
