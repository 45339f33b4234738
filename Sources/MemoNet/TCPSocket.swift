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
    /// The in-memory far end when this socket is embedded (`TCPSocket.embedded()`): reads and writes go there.
    public let embedded: EmbeddedPeer?

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
        embedded = nil
    }

    private init(peer: EmbeddedPeer) {
        descriptor = OwnedDescriptor(-1)
        embedded = peer
    }

    /// A socket with no descriptor whose far end is in memory: what a test writes into the peer this socket
    /// reads, and what this socket writes the test takes from the peer. For `EventLoop.embedded` loops.
    public static func embedded() -> (socket: TCPSocket, peer: EmbeddedPeer) {
        let peer = EmbeddedPeer()
        return (TCPSocket(peer: peer), peer)
    }

    /// The descriptor, for registering with an event loop; -1 once closed.
    public var fileDescriptor: Int32 {
        descriptor.fd
    }

    /// The descriptor a `SendBatch` sends to; -1 for an embedded socket (its far end is in memory) or once closed.
    public var sendDescriptor: Int32 {
        embedded == nil ? descriptor.fd : -1
    }

    /// True once `close()` has run.
    public var isClosed: Bool {
        if let embedded { return embedded.isClosed }
        return descriptor.fd < 0
    }

    /// Reads up to `buffer.count` bytes without blocking.
    /// - Throws: `NetError` for a reset connection and every other failure.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> ReadResult {
        precondition(buffer.count > 0, "a zero-length read cannot tell end of stream from no data")
        if let embedded { return try embedded.socketRead(into: buffer) }
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
        if let embedded { return try embedded.socketWrite(buffer) }
        let fd = try descriptor.require("send")
        guard buffer.count > 0 else { return .wrote(0) }
        return try Self.send(buffer, on: fd)
    }

    /// One non-blocking `send` without SIGPIPE on a descriptor (`write`'s, and `SendBatch`'s when it has no ring).
    static func send(_ buffer: UnsafeRawBufferPointer, on fd: Int32) throws(NetError) -> WriteResult {
        let flags = Int32(MSG_NOSIGNAL)
        switch try Syscall.nonBlocking("send", { Glibc.send(fd, buffer.baseAddress, buffer.count, flags) }) {
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

    /// Asks the kernel to find a peer that is gone (a host down, a network cut) even when nobody writes: TCP
    /// keepalive probes after `settings.idle` of silence, and `TCP_USER_TIMEOUT` so that data left unacknowledged
    /// (queued for a peer that vanished) ends the connection too, instead of the kernel's default of about
    /// 15 minutes of retransmissions. A peer process that is stopped or hung still has a live kernel that answers
    /// these: only the application's own ping finds it.
    public func detectDeadPeer(_ settings: DeadPeerDetection = .standard) throws(NetError) {
        let fd = try descriptor.require("setsockopt(SO_KEEPALIVE)")
        let tcp = Int32(IPPROTO_TCP)
        try Syscall.setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE")
        try Syscall.setOption(fd, tcp, TCP_KEEPIDLE, settings.idleSeconds, "TCP_KEEPIDLE")
        try Syscall.setOption(fd, tcp, TCP_KEEPINTVL, settings.intervalSeconds, "TCP_KEEPINTVL")
        try Syscall.setOption(fd, tcp, TCP_KEEPCNT, settings.probes, "TCP_KEEPCNT")
        try Syscall.setOption(fd, tcp, TCP_USER_TIMEOUT, settings.userTimeoutMilliseconds, "TCP_USER_TIMEOUT")
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
        if let embedded { return try embedded.socketShutdownWrite() }
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

    /// True when the socket is connected to itself: its local and peer address are the same. A connect to a free
    /// port of the ephemeral range on this host can pick that very port as its own and meet itself (TCP's
    /// simultaneous open), which looks connected although nobody listens; a caller should treat it as refused.
    /// False for an embedded socket or when either address cannot be read.
    public var isConnectedToItself: Bool {
        guard embedded == nil, let local = try? localAddress(), let peer = try? peerAddress() else { return false }
        return local == peer
    }

    /// Closes the socket; later calls do nothing. Deregister it from its event loop first.
    public func close() {
        embedded?.socketClose()
        descriptor.close()
    }
}

/// The kernel's dead-peer detection on a TCP connection (`TCPSocket.detectDeadPeer`).
public struct DeadPeerDetection: Sendable, Hashable {
    /// Silence before the first keepalive probe (`TCP_KEEPIDLE`).
    public var idleSeconds: Int32
    /// Between probes (`TCP_KEEPINTVL`).
    public var intervalSeconds: Int32
    /// Unanswered probes that end the connection (`TCP_KEEPCNT`).
    public var probes: Int32
    /// How long sent data (or a probe) may stay unacknowledged before the connection ends (`TCP_USER_TIMEOUT`).
    public var userTimeoutMilliseconds: Int32

    public init(idleSeconds: Int32, intervalSeconds: Int32, probes: Int32, userTimeoutMilliseconds: Int32) {
        self.idleSeconds = idleSeconds
        self.intervalSeconds = intervalSeconds
        self.probes = probes
        self.userTimeoutMilliseconds = userTimeoutMilliseconds
    }

    /// What memo-server sets on every accepted connection and memo-client on every connection it makes: a
    /// first probe after 15 s of silence, then every 5 s, 3 unanswered probes (15 + 3 × 5 = 30 s), and 30 s for
    /// unacknowledged data, so a dead peer is found within about 30 s whether the connection was idle or had
    /// data queued. (Linux's defaults are 2 hours of silence and about 15 minutes of retransmissions.)
    public static let standard = DeadPeerDetection(
        idleSeconds: 15, intervalSeconds: 5, probes: 3, userTimeoutMilliseconds: 30_000)
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
