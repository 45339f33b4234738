internal import CMemoLinux
import Glibc

/// A non-blocking TCP listener.
public final class ListeningSocket: Sendable {
    /// A connection taken from the accept queue.
    public struct Accepted: Sendable {
        /// The connected socket, non-blocking and close-on-exec.
        public let socket: TCPSocket
        /// The client's address.
        public let peer: SocketAddress
    }

    let descriptor: OwnedDescriptor

    private init(fd: Int32) {
        descriptor = OwnedDescriptor(fd)
    }

    /// Creates a non-blocking listener on `address` with SO_REUSEADDR. Port 0 picks a free port; read it back
    /// with `localAddress()`.
    /// - Parameters:
    ///   - address: Where to listen, such as `127.0.0.1:0` or `[::]:7777`.
    ///   - backlog: The accept queue length (the kernel caps it at `net.core.somaxconn`).
    /// - Throws: `NetError` from `socket`, `bind` (EADDRINUSE, EACCES) or `listen`.
    public static func bind(_ address: SocketAddress, backlog: Int32 = 1024) throws(NetError) -> ListeningSocket {
        Syscall.ignoreSIGPIPE()
        let domain = address.family == .inet6 ? AF_INET6 : AF_INET
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try Syscall.call("socket") { socket(domain, type, 0) }
        let listener = ListeningSocket(fd: fd)
        try Syscall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
        _ = try address.withSockAddr { (pointer, length) throws(NetError) in
            try Syscall.call("bind(\(address))") { Glibc.bind(fd, pointer, length) }
        }
        try Syscall.call("listen(\(address))") { listen(fd, backlog) }
        return listener
    }

    /// The descriptor, for registering with an event loop; -1 once closed.
    public var fileDescriptor: Int32 {
        descriptor.fd
    }

    /// The bound address, with the real port when bound to port 0.
    public func localAddress() throws(NetError) -> SocketAddress {
        let fd = try descriptor.require("getsockname")
        return try SocketAddress.query("getsockname") { getsockname(fd, $0, $1) }
    }

    /// Takes one connection from the accept queue without blocking.
    ///
    /// Connections that failed while queued (ECONNABORTED, EPROTO and the network errors `accept4(2)` lists)
    /// are skipped.
    /// - Returns: The connection, or nil when the queue is empty.
    /// - Throws: `NetError`; `isResourceExhaustion` is true for EMFILE/ENFILE/ENOBUFS/ENOMEM, after which the
    ///   caller should pause accepting (see `Acceptor`) rather than spin on the still-queued connection.
    public func accept() throws(NetError) -> Accepted? {
        let fd = try descriptor.require("accept4")
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let result: IOResult<Int32>
            do throws(NetError) {
                result = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(NetError) -> IOResult<Int32> in
                    try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(NetError) in
                        try Syscall.nonBlocking("accept4") { CMemoLinux_accept4(fd, address, &length, flags) }
                    }
                }
            } catch where ListeningSocket.skippable.contains(error.errno) {
                continue
            }
            guard case .done(let client) = result else { return nil }
            let socket = TCPSocket(owned: client)
            let peer: SocketAddress
            do {
                peer = try SocketAddress(storage: storage, length: length)
            } catch {
                socket.close()
                continue
            }
            return Accepted(socket: socket, peer: peer)
        }
    }

    /// Closes the listener; later calls do nothing. Deregister it from its event loop first.
    public func close() {
        descriptor.close()
    }

    /// Errors that concern only the connection being accepted (see accept4(2), "Error handling").
    private static let skippable: Set<Int32> = [
        ECONNABORTED, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH,
    ]
}
