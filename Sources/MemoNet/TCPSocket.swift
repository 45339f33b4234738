import Glibc
internal import CMemoLinux

/// A connected, non-blocking TCP socket that closes its descriptor exactly once.
///
/// Sendable so that an accepted socket can be handed to another event loop; after that, its reads, writes and
/// close belong to that loop's thread.
public final class TCPSocket: Sendable {
    /// The result of a non-blocking read.
    public enum ReadResult: Sendable, Equatable {
        /// This many bytes (at least 1) were read into the buffer.
        case bytes(Int)
        /// Nothing to read yet.
        case wouldBlock
        /// The peer closed its sending side.
        case eof
    }

    /// The result of a non-blocking write.
    public enum WriteResult: Sendable, Equatable {
        /// This many bytes (possibly fewer than offered) were queued in the kernel.
        case wrote(Int)
        /// The send buffer is full.
        case wouldBlock
    }

    let descriptor: OwnedDescriptor

    /// Takes ownership of a connected socket descriptor and makes it non-blocking.
    /// - Throws: `NetError` when the descriptor cannot be made non-blocking; it is closed then.
    public convenience init(adopting fd: Int32) throws(NetError) {
        self.init(owned: fd)
        try setBlocking(false)
    }

    /// Takes ownership of a descriptor that is already non-blocking (from `accept4` or `socket`).
    init(owned fd: Int32) {
        Syscall.ignoreSIGPIPE()
        descriptor = OwnedDescriptor(fd)
    }

    /// The descriptor, for registering with an event loop; -1 once closed.
    public var fileDescriptor: Int32 {
        descriptor.fd
    }

    /// True once `close()` has run.
    public var isClosed: Bool {
        descriptor.fd < 0
    }

    /// Reads up to `buffer.count` bytes without blocking.
    /// - Throws: `NetError` for a reset connection and every other failure.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> ReadResult {
        precondition(buffer.count > 0, "a zero-length read cannot tell end of stream from no data")
        let fd = try descriptor.require("read")
        switch try Syscall.nonBlocking("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .wouldBlock: return .wouldBlock
        case .done(0): return .eof
        case .done(let count): return .bytes(count)
        }
    }

    /// Writes as much of `buffer` as the send buffer takes, without blocking and without SIGPIPE.
    /// - Throws: `NetError` (EPIPE, ECONNRESET, ...) when the connection is gone.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(NetError) -> WriteResult {
        let fd = try descriptor.require("send")
        guard buffer.count > 0 else { return .wrote(0) }
        let flags = Int32(MSG_NOSIGNAL)
        switch try Syscall.nonBlocking("send", { send(fd, buffer.baseAddress, buffer.count, flags) }) {
        case .wouldBlock: return .wouldBlock
        case .done(let count): return .wrote(count)
        }
    }

    /// Writes several buffers with one `sendmsg` (gathered, like `writev`, but with MSG_NOSIGNAL).
    ///
    /// At most `IOV_MAX` (1024) buffers are offered per call; the count written says how far it got.
    public func writev(_ buffers: [UnsafeRawBufferPointer]) throws(NetError) -> WriteResult {
        let fd = try descriptor.require("sendmsg")
        let used = buffers.prefix(1024).filter { $0.count > 0 }
        guard !used.isEmpty else { return .wrote(0) }
        var vectors = used.map {
            iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
        }
        let flags = Int32(MSG_NOSIGNAL)
        let result = try vectors.withUnsafeMutableBufferPointer { (iov) throws(NetError) -> IOResult<Int> in
            var message = msghdr()
            message.msg_iov = iov.baseAddress
            message.msg_iovlen = iov.count
            return try Syscall.nonBlocking("sendmsg", { sendmsg(fd, &message, flags) })
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .done(let count): return .wrote(count)
        }
    }

    /// Turns Nagle's algorithm off (`on == true`) so small frames leave at once.
    public func setNoDelay(_ on: Bool = true) throws(NetError) {
        let fd = try descriptor.require("setsockopt(TCP_NODELAY)")
        try Syscall.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, on ? 1 : 0, "TCP_NODELAY")
    }

    /// Switches between non-blocking (the default) and blocking mode.
    public func setBlocking(_ blocking: Bool) throws(NetError) {
        let fd = try descriptor.require("fcntl")
        let flags = try Syscall.call("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        let wanted = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK
        if wanted != flags {
            try Syscall.call("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, wanted) }
        }
    }

    /// Sends FIN: the peer reads end of stream, and this side can still read.
    public func shutdownWrite() throws(NetError) {
        let fd = try descriptor.require("shutdown")
        try Syscall.call("shutdown") { shutdown(fd, Int32(SHUT_WR)) }
    }

    /// The local address (`getsockname`).
    public func localAddress() throws(NetError) -> SocketAddress {
        let fd = try descriptor.require("getsockname")
        return try SocketAddress.query("getsockname") { getsockname(fd, $0, $1) }
    }

    /// The peer's address (`getpeername`).
    public func peerAddress() throws(NetError) -> SocketAddress {
        let fd = try descriptor.require("getpeername")
        return try SocketAddress.query("getpeername") { getpeername(fd, $0, $1) }
    }

    /// Closes the socket; later calls do nothing. Deregister it from its event loop first.
    public func close() {
        descriptor.close()
    }
}

extension SocketAddress {
    /// Fills a `sockaddr_storage` with `body` (`getsockname`, `getpeername`, `accept4`).
    static func query(
        _ operation: String,
        _ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(NetError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(NetError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(NetError) in
                try Syscall.call(operation) { body(address, &length) }
            }
        }
        return try SocketAddress(storage: storage, length: length)
    }
}
