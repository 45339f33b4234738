import Foundation
import Glibc
import MemoNet
import Synchronization

/// A loopback TCP proxy that can lose one answer: once armed, it cuts both sides of the connection as soon as
/// the server sends anything after the client has sent something (the server has then done the request).
package final class CuttingProxy: Sendable {
    private struct State {
        var armed = false
        var clientBytesSinceArmed = 0
        var cuts = 0
    }

    package let port: UInt16
    private let listener: Int32
    private let target: SocketAddress
    private let state = Mutex(State())
    private let book = ProxyBook()

    package init(to target: SocketAddress) throws {
        self.target = target
        (listener, port) = try loopbackListener()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    package var address: String { "127.0.0.1:\(port)" }
    package var cuts: Int { state.withLock { $0.cuts } }
    package var connections: Int { book.connections }

    /// Loses the next answer.
    package func arm() {
        state.withLock {
            $0.armed = true
            $0.clientBytesSinceArmed = 0
        }
    }

    package func stop() {
        book.stop(listener: listener)
        close(listener)
    }

    private func acceptLoop() {
        book.acceptLoop(listener, dialing: target) { client, server in
            Thread.detachNewThread { [self] in pump(from: client, to: server, towardServer: true) }
            Thread.detachNewThread { [self] in pump(from: server, to: client, towardServer: false) }
        }
    }

    private func pump(from source: Int32, to destination: Int32, towardServer: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            let cut = state.withLock { state -> Bool in
                if towardServer {
                    if state.armed { state.clientBytesSinceArmed += count }
                    return false
                }
                guard state.armed, state.clientBytesSinceArmed > 0 else { return false }
                state.armed = false
                state.cuts += 1
                return true
            }
            if cut || !sendAll(buffer[..<count], to: destination) { break }
        }
        // Either side ending ends both: the answer in `buffer` is dropped with the connection.
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}

/// Writes all of `bytes` to the blocking socket `fd` (retrying EINTR and short writes). - Returns: false when the
/// socket failed first.
package func sendAll(_ bytes: ArraySlice<UInt8>, to fd: Int32) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes {
            send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
        }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}

/// A blocking TCP listener on a free loopback port, for a test proxy. - Returns: its descriptor and port.
package func loopbackListener() throws -> (Int32, UInt16) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, listen(listener, 16) == 0 else {
        close(listener)
        throw POSIXError(.EADDRINUSE)
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
    }
    return (listener, UInt16(bigEndian: address.sin_port))
}

/// The connections a test proxy holds: counted, and cut all at once by `stop`.
package final class ProxyBook: Sendable {
    private struct State {
        var connections = 0
        var descriptors: [Int32] = []
        var stopped = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Connections accepted and passed on so far.
    package var connections: Int { state.withLock { $0.connections } }

    /// Shuts `listener` and every connection down.
    package func stop(listener: Int32) {
        let descriptors = state.withLock { state in
            state.stopped = true
            return state.descriptors
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in descriptors { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Accepts clients on the blocking `listener` until it is shut down, connects to `target` for each, and
    /// hands both descriptors to `serve` (which starts the pumps).
    package func acceptLoop(_ listener: Int32, dialing target: SocketAddress, serve: (Int32, Int32) -> Void) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            guard let server = try? TCPSocket.connect(to: target, timeout: .seconds(5)) else {
                close(client)
                continue
            }
            try? server.setBlocking(true)
            let serverFD = dup(server.fileDescriptor)
            server.close()
            let keep = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections += 1
                state.descriptors += [client, serverFD]
                return true
            }
            guard keep else {
                close(client)
                close(serverFD)
                return
            }
            serve(client, serverFD)
        }
    }
}
