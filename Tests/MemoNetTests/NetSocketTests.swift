import Glibc
import Testing

@testable import MemoNet

@Suite("Net: sockets")
struct NetSocketTests {
    /// A listener on `host` port 0, a client connected to it, and the accepted server side.
    private func connectedPair(
        host: String
    ) throws -> (listener: ListeningSocket, client: TCPSocket, server: ListeningSocket.Accepted) {
        let listener = try ListeningSocket.bind(SocketAddress(parsing: "\(host):0"), backlog: 16)
        let client = try TCPSocket.connect(to: listener.localAddress(), timeout: .seconds(5))
        // Loopback connects complete before connect returns, but the kernel may queue the accept a moment later:
        // wait on the listener with poll rather than sleeping.
        var entry = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry, 1, 5000) == 1)
        let server = try #require(try listener.accept())
        return (listener, client, server)
    }

    @Test func deadPeerDetectionSetsKeepaliveProbesAndTheUserTimeout() throws {
        let (listener, client, server) = try connectedPair(host: "127.0.0.1")
        defer {
            listener.close()
            client.close()
            server.socket.close()
        }
        let settings = DeadPeerDetection.standard
        try server.socket.detectDeadPeer(settings)
        let fd = server.socket.fileDescriptor
        let tcp = Int32(IPPROTO_TCP)
        #expect(try Syscall.getOption(fd, SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE") == 1)
        #expect(try Syscall.getOption(fd, tcp, TCP_KEEPIDLE, "TCP_KEEPIDLE") == 15)
        #expect(try Syscall.getOption(fd, tcp, TCP_KEEPINTVL, "TCP_KEEPINTVL") == 5)
        #expect(try Syscall.getOption(fd, tcp, TCP_KEEPCNT, "TCP_KEEPCNT") == 3)
        #expect(try Syscall.getOption(fd, tcp, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT") == 30_000)
        // The user timeout covers the whole keepalive schedule, so neither cuts the other short.
        #expect(settings.idleSeconds + settings.intervalSeconds * settings.probes
            == settings.userTimeoutMilliseconds / 1000)
    }

    @Test("a listener bound to port 0 reports the real port, and accept gives the client's address",
          arguments: ["127.0.0.1", "[::1]"])
    func portZeroAndAccept(host: String) throws {
        let (listener, client, server) = try connectedPair(host: host)
        let local = try listener.localAddress()
        #expect(local.port != 0)
        #expect(local.description == "\(host):\(local.port)")
        #expect(server.peer == (try client.localAddress()))
        #expect(try server.socket.localAddress() == local)
        #expect(try client.peerAddress() == local)
        #expect(try listener.accept() == nil, "an empty accept queue gives nil, not an error")
    }

    @Test("bytes written on one side are read on the other; a peer that closes gives eof")
    func readWriteAndEOF() throws {
        let (_, client, server) = try connectedPair(host: "127.0.0.1")
        try client.setNoDelay()
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(try buffer.withUnsafeMutableBytes { try server.socket.read(into: $0) } == .wouldBlock)

        let head = Array("memo ".utf8), tail = Array("net".utf8)
        let written = try head.withUnsafeBytes { a in
            try tail.withUnsafeBytes { b in try client.writev([a, b]) }
        }
        #expect(written == .wrote(8))
        #expect(try server.socket.wait(for: .readable, timeout: .seconds(5)))
        let read = try buffer.withUnsafeMutableBytes { try server.socket.read(into: $0) }
        #expect(read == .bytes(8))
        #expect(Array(buffer.prefix(8)) == Array("memo net".utf8))

        client.close()
        client.close()  // closing twice is harmless
        #expect(client.isClosed)
        #expect(try server.socket.wait(for: .readable, timeout: .seconds(5)))
        #expect(try buffer.withUnsafeMutableBytes { try server.socket.read(into: $0) } == .eof)
    }

    @Test("writing to a reset connection throws instead of raising SIGPIPE")
    func writeAfterPeerResetThrows() throws {
        let (_, client, server) = try connectedPair(host: "127.0.0.1")
        // SO_LINGER with a zero timeout makes close send RST.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        let size = socklen_t(MemoryLayout<Glibc.linger>.size)
        #expect(setsockopt(server.socket.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, size) == 0)
        server.socket.close()
        #expect(try client.wait(for: .readable, timeout: .seconds(5)))
        let payload = [UInt8](repeating: 1, count: 1024)
        let error = #expect(throws: NetError.self) {
            // The first send may still be accepted before the RST is processed; keep writing until it fails.
            for _ in 0..<100 {
                _ = try payload.withUnsafeBytes { try client.write($0) }
            }
        }
        #expect(error.map { $0.isConnectionLoss } == true)
    }

    @Test("connecting to a port nobody listens on fails with ECONNREFUSED")
    func connectRefused() throws {
        // Bind and close a listener to find a port that is free right now.
        let listener = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let address = try listener.localAddress()
        listener.close()
        let error = #expect(throws: NetError.self) {
            _ = try TCPSocket.connect(to: address, timeout: .seconds(5))
        }
        #expect(error?.errno == ECONNREFUSED)
        #expect(error?.operation.contains("connect") == true)
    }

    @Test("binding an address in use fails with EADDRINUSE")
    func bindInUse() throws {
        let first = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let error = #expect(throws: NetError.self) {
            _ = try ListeningSocket.bind(first.localAddress())
        }
        #expect(error?.errno == EADDRINUSE)
    }

    @Test("I/O on a closed socket throws EBADF instead of touching a reused descriptor")
    func closedSocketThrows() throws {
        let (_, client, _) = try connectedPair(host: "127.0.0.1")
        client.close()
        var buffer = [UInt8](repeating: 0, count: 4)
        let error = #expect(throws: NetError.self) {
            _ = try buffer.withUnsafeMutableBytes { try client.read(into: $0) }
        }
        #expect(error?.errno == EBADF)
    }
}
