import Glibc
import MemoNet
import MemoTestSupport
import MemoTLS
import Synchronization
import TLSTestSupport
import Testing

@testable import MemoClient

/// A connect to a port nobody listens on, from a socket that has that very port (a retry to a stopped server on
/// an ephemeral port can be given it), meets itself: TCP's simultaneous open connects the socket to itself.
@Suite struct ClientSelfConnectTests {
    /// A non-blocking socket bound to 127.0.0.1:P (SO_REUSEADDR) and connecting to 127.0.0.1:P: the
    /// self-connect, made on purpose.
    static func socketConnectingToItself() throws -> TCPSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        try #require(fd >= 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        try #require(bound)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                connect(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0 || errno == EINPROGRESS)
        let socket = try TCPSocket(adopting: fd)
        return socket
    }

    @Test func aConnectionThatMetItselfEndsAsRefusedNotAsATLSFailure() throws {
        try withTemporaryDirectory { directory in
            let fixture = try TLSFixture(directory: directory)
            let engine = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            let socket = try Self.socketConnectingToItself()
            let loop = try EventLoop.start(name: "self-connect")
            defer { loop.shutdownGracefully() }
            let ends = Mutex<[TransportEnd]>([])
            let connection = WireConnection(
                loop: loop, address: try socket.localAddress(), engine: engine)
            loop.execute {
                connection.onEnd = { end in ends.withLock { $0.append(end) } }
                connection.start(on: socket, connected: false)
            }
            #expect(pollUntil(seconds: 30) { !ends.withLock(\.isEmpty) })
            let first = ends.withLock { $0.first }
            let end = try #require(first)
            guard case .io(let reason) = end else {
                Issue.record("expected a refused connect, got \(end)")
                return
            }
            #expect(reason.contains("refused"))
            // Before the welcome, an I/O end is an unreachable server: tried again with the usual backoff, not
            // after the 30 s a TLS failure waits.
            #expect(ConnectionEnd(end, afterWelcome: false).isWorthRetrying)
            loop.execute { connection.close(polite: false) }
        }
    }
}
