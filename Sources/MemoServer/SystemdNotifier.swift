import Foundation
import Glibc

/// Tells systemd (a `Type=notify` unit) how the server is doing: one datagram per state to the Unix socket that
/// `NOTIFY_SOCKET` names (a path, or an abstract name written with a leading `@`), as `sd_notify(3)` does,
/// with no library. Without `NOTIFY_SOCKET` every call does nothing.
public final class SystemdNotifier: Sendable {
    /// The socket address, as sendto(2) takes it, and its length; nil when not run under systemd.
    private let address: [UInt8]?
    private let socketDescriptor: Int32
    /// How often to send `WATCHDOG=1` (half of `WATCHDOG_USEC`), when systemd asks this process for it.
    public let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        watchdogInterval = Self.watchdogInterval(environment: environment, pid: getpid())
        guard let path = environment["NOTIFY_SOCKET"], let address = Self.socketAddress(path) else {
            self.address = nil
            socketDescriptor = -1
            return
        }
        self.address = address
        socketDescriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit {
        if socketDescriptor >= 0 { close(socketDescriptor) }
    }

    /// Whether `NOTIFY_SOCKET` named a socket this process can send to.
    public var isActive: Bool { address != nil && socketDescriptor >= 0 }

    /// `READY=1`: the server listens and has loaded its store.
    public func ready() { send("READY=1") }

    /// `RELOADING=1` with the monotonic time, before a reload (systemd 253's `Type=notify-reload` needs it).
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let micros = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        send("RELOADING=1\nMONOTONIC_USEC=\(micros)")
    }

    /// `STOPPING=1`: the server has begun to shut down.
    public func stopping() { send("STOPPING=1") }

    /// `WATCHDOG=1`: the server is alive.
    public func watchdog() { send("WATCHDOG=1") }

    /// Sends one datagram; a failure is ignored, as sd_notify's callers do (systemd may be gone).
    public func send(_ state: String) {
        guard let address, socketDescriptor >= 0 else { return }
        let bytes = Array(state.utf8)
        address.withUnsafeBytes { raw in
            let sockaddr = raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)
            _ = bytes.withUnsafeBytes { payload in
                sendto(socketDescriptor, payload.baseAddress, payload.count, Int32(MSG_NOSIGNAL), sockaddr,
                       socklen_t(raw.count))
            }
        }
    }

    /// A `sockaddr_un` for `path` (a leading `@` is an abstract name: a zero byte, the rest, no terminator), as
    /// raw bytes cut to the length sendto needs; nil when the path is empty, relative or too long.
    static func socketAddress(_ path: String) -> [UInt8]? {
        var name = Array(path.utf8)
        let abstract = name.first == UInt8(ascii: "@")
        guard !name.isEmpty, abstract || name.first == UInt8(ascii: "/") else { return nil }
        if abstract { name[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity || (abstract && name.count <= capacity) else { return nil }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        var bytes = withUnsafeBytes(of: &address) { Array($0) }
        bytes.replaceSubrange(offset..<offset + name.count, with: name)
        // A path ends with its terminating zero; an abstract name is exactly its bytes.
        return Array(bytes[0..<offset + name.count + (abstract ? 0 : 1)])
    }

    /// Half of `WATCHDOG_USEC` when it is set and `WATCHDOG_PID` is unset or this process's id.
    static func watchdogInterval(environment: [String: String], pid: pid_t) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let micros = UInt64(text), micros > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], owner != String(pid) { return nil }
        return .microseconds(micros / 2)
    }
}
