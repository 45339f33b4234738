import Glibc
internal import CMemoLinux

/// An IPv4 or IPv6 socket address, kept as a `sockaddr_storage` and its length.
///
/// Written and parsed as `"HOST:PORT"` for IPv4 and `"[V6]:PORT"` for IPv6; names such as `localhost` are
/// resolved with `getaddrinfo`.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// Address family of a socket address.
    public enum Family: Sendable {
        case inet
        case inet6
    }

    var storage: sockaddr_storage
    var length: socklen_t

    /// Wraps a `sockaddr_storage` filled by the kernel (`accept4`, `getsockname`, `getpeername`).
    /// - Throws: `NetError` when the family is neither `AF_INET` nor `AF_INET6`.
    init(storage: sockaddr_storage, length: socklen_t) throws(NetError) {
        let family = Int32(storage.ss_family)
        guard family == AF_INET || family == AF_INET6 else {
            throw NetError(operation: "SocketAddress", message: "unsupported address family \(family)")
        }
        self.storage = storage
        self.length = length
    }

    /// Parses `"1.2.3.4:80"`, `"[::1]:80"` or `"name:80"`, resolving names with `getaddrinfo`.
    ///
    /// A name that resolves to several addresses gives the first one `getaddrinfo` prefers; use
    /// `resolve(_:)` to get them all.
    /// - Throws: `NetError` for a malformed string, a bad port or a failed lookup.
    public init(parsing text: String) throws(NetError) {
        let all = try SocketAddress.resolve(text)
        self = all[0]
    }

    /// Every address `"HOST:PORT"` stands for, in `getaddrinfo` order, without duplicates.
    /// - Throws: `NetError` for a malformed string, a bad port or a failed lookup.
    public static func resolve(_ text: String) throws(NetError) -> [SocketAddress] {
        let (host, port, bracketed) = try split(text)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        if bracketed {
            hints.ai_family = AF_INET6
            hints.ai_flags |= AI_NUMERICHOST
        } else {
            hints.ai_family = AF_UNSPEC
        }
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let message = status == EAI_SYSTEM
                ? String(cString: strerror(errno))
                : String(cString: gai_strerror(status))
            throw NetError(operation: "getaddrinfo(\(host))", message: message)
        }
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var node = list
        while let info = node {
            node = info.pointee.ai_next
            guard let address = info.pointee.ai_addr else { continue }
            let family = info.pointee.ai_family
            guard family == AF_INET || family == AF_INET6 else { continue }
            var storage = sockaddr_storage()
            let length = info.pointee.ai_addrlen
            withUnsafeMutableBytes(of: &storage) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
            }
            let candidate = try SocketAddress(storage: storage, length: length)
            if !result.contains(candidate) { result.append(candidate) }
        }
        guard !result.isEmpty else {
            throw NetError(operation: "getaddrinfo(\(host))", message: "no IPv4 or IPv6 address")
        }
        return result
    }

    /// Splits `"HOST:PORT"` or `"[V6]:PORT"` into host, port and whether the host was bracketed.
    private static func split(_ text: String) throws(NetError) -> (String, UInt16, Bool) {
        func bad(_ why: String) -> NetError {
            NetError(operation: "SocketAddress(\"\(text)\")", message: why)
        }
        guard let colon = text.lastIndex(of: ":") else { throw bad("expected HOST:PORT") }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), portText.count <= 5,
              let port = UInt16(portText)
        else { throw bad("port must be a number from 0 to 65535") }
        var bracketed = false
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw bad("unclosed [ in IPv6 address") }
            host = String(host.dropFirst().dropLast())
            bracketed = true
        } else if host.contains(":") {
            throw bad("an IPv6 address needs brackets: [ADDRESS]:PORT")
        }
        guard !host.isEmpty else { throw bad("empty host") }
        return (host, port, bracketed)
    }

    /// The address family.
    public var family: Family {
        Int32(storage.ss_family) == AF_INET6 ? .inet6 : .inet
    }

    /// The port, in host byte order.
    public var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            // sin_port and sin6_port share the same offset, right after the family.
            UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sa_family_t>.size, as: UInt16.self))
        }
    }

    /// The host part without brackets or port: `"127.0.0.1"`, `"::1"`, `"fe80::1%eth0"`.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = withSockAddr { address, length in
            getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
        }
        guard status == 0 else { return "?" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `"HOST:PORT"` for IPv4, `"[HOST]:PORT"` for IPv6.
    public var description: String {
        family == .inet6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Calls `body` with a `sockaddr` pointer and length, for `bind`, `connect` and friends.
    func withSockAddr<R, E: Error>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var copy = storage
        let length = self.length
        return try withUnsafePointer(to: &copy) { (pointer) throws(E) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(E) -> R in
                try body(address, length)
            }
        }
    }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.length == rhs.length && lhs.significantBytes == rhs.significantBytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(significantBytes)
    }

    private var significantBytes: [UInt8] {
        withUnsafeBytes(of: storage) { Array($0.prefix(Int(length))) }
    }
}
