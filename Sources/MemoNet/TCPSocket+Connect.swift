import Glibc
internal import CMemoLinux

extension TCPSocket {
    /// Whether a non-blocking connect finished at once.
    public enum ConnectResult: Sendable, Equatable {
        /// Connected already (usual for loopback).
        case connected
        /// Wait for `.writable`, then call `finishConnect()`.
        case inProgress
    }

    /// Starts a non-blocking connect to `address`.
    /// - Returns: The socket and whether it is connected yet.
    /// - Throws: `NetError` when the connect failed at once (ECONNREFUSED can come here for loopback).
    public static func startConnect(to address: SocketAddress) throws(NetError) -> (TCPSocket, ConnectResult) {
        Syscall.ignoreSIGPIPE()
        let domain = address.family == .inet6 ? AF_INET6 : AF_INET
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try Syscall.call("socket") { socket(domain, type, 0) }
        let connection = TCPSocket(owned: fd)
        let inProgress = try address.withSockAddr { (pointer, length) throws(NetError) -> Bool in
            // A connect interrupted by a signal goes on in the background; treat EINTR like EINPROGRESS
            // rather than calling connect again (which would fail with EALREADY).
            if Glibc.connect(fd, pointer, length) == 0 { return false }
            let code = errno
            if code == EINPROGRESS || code == EINTR { return true }
            throw NetError(errno: code, operation: "connect(\(address))")
        }
        return (connection, inProgress ? .inProgress : .connected)
    }

    /// Completes a connect that was `.inProgress`, once the socket reported writable.
    /// - Throws: `NetError` with the connect's error (ECONNREFUSED, ETIMEDOUT, ...).
    public func finishConnect() throws(NetError) {
        let fd = try descriptor.require("connect")
        let code = try Syscall.getOption(fd, SOL_SOCKET, SO_ERROR, "SO_ERROR")
        if code != 0 { throw NetError(errno: code, operation: "connect") }
    }

    /// Connects to `address`, waiting at most `timeout`; for clients outside an event loop.
    ///
    /// The socket stays non-blocking: use `wait(for:timeout:)` before reads and writes, or `setBlocking(true)`.
    /// - Throws: `NetError` with ETIMEDOUT when the deadline passes, or the connect's error.
    public static func connect(to address: SocketAddress, timeout: Duration) throws(NetError) -> TCPSocket {
        let deadline = Monotonic.deadline(after: timeout)
        let (socket, state) = try startConnect(to: address)
        do throws(NetError) {
            if state == .inProgress {
                guard try socket.wait(for: .writable, deadline: deadline) else {
                    throw NetError(errno: ETIMEDOUT, operation: "connect(\(address))")
                }
                try socket.finishConnect()
            }
            return socket
        } catch {
            socket.close()
            throw error
        }
    }

    /// Waits with `poll` until the socket is ready for `interest`, or `timeout` passes (nil waits for ever).
    /// - Returns: true when ready (errors and hang-ups count as ready: the next call reports them).
    public func wait(for interest: Interest, timeout: Duration?) throws(NetError) -> Bool {
        try wait(for: interest, deadline: timeout.map { Monotonic.deadline(after: $0) } ?? UInt64.max)
    }

    func wait(for interest: Interest, deadline: UInt64) throws(NetError) -> Bool {
        let fd = try descriptor.require("poll")
        var events: Int16 = 0
        if interest.contains(.readable) { events |= Int16(POLLIN) }
        if interest.contains(.writable) { events |= Int16(POLLOUT) }
        while true {
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let timeout = deadline == UInt64.max ? -1 : Monotonic.millisecondsUntil(deadline)
            let count = poll(&entry, 1, timeout)
            if count > 0 { return true }
            if count == 0 {
                if timeout == 0 || Monotonic.now() >= deadline { return false }
                continue
            }
            let code = errno
            if code != EINTR { throw NetError(errno: code, operation: "poll") }
        }
    }
}
