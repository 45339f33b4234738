import Glibc

/// One address as a person writes it: `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`, checked for form only (no
/// name lookup), so that a command line can refuse a malformed address as a usage error before connecting.
///
/// It takes one address: a list of addresses is split by its caller and parsed element by element.
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    /// The host without brackets: `127.0.0.1`, `::1`, `memo.example`.
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Why an address is malformed, in words for a person (no type names).
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        public let text: String
        public let reason: String
        public var description: String { "'\(text)' is not an address: \(reason)" }
    }

    /// Parses one address; `defaultPort` stands in when no port is written.
    /// - Throws: `SyntaxError` for an empty host, a bad port, an unclosed bracket or an unbracketed IPv6 address
    ///   followed by a port.
    public init(parsing text: String, defaultPort: UInt16?) throws(SyntaxError) {
        func bad(_ reason: String) -> SyntaxError { SyntaxError(text: text, reason: reason) }
        var hostPart: Substring
        var portPart: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad("unclosed [ in an IPv6 address") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { throw bad("expected :PORT after ]") }
                portPart = rest.dropFirst()
            }
            guard hostPart.contains(":") else { throw bad("brackets are for IPv6 addresses only") }
        } else if text.filter({ $0 == ":" }).count > 1 {
            // A bare IPv6 address: without brackets its last group cannot be told from a port.
            hostPart = Substring(text)
        } else if let colon = text.firstIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        } else {
            hostPart = Substring(text)
        }
        guard !hostPart.isEmpty else { throw bad("the host is empty") }
        guard !hostPart.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) else {
            throw bad("the host may not contain spaces, slashes or brackets")
        }
        if hostPart.contains(":") {
            // Only an IPv6 literal has colons in its host; anything else is a mistyped HOST:PORT.
            var probe = in6_addr()
            let literal = hostPart.split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
            guard inet_pton(AF_INET6, literal, &probe) == 1 else {
                throw bad("not an IPv6 address (with a port, write it as [ADDRESS]:PORT)")
            }
        }
        host = String(hostPart)
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let port = UInt16(portPart)
            else { throw bad("the port must be a number from 0 to 65535") }
            self.port = port
        } else if let defaultPort {
            port = defaultPort
        } else {
            throw bad("a port is needed (HOST:PORT)")
        }
    }

    /// `HOST:PORT`, or `[V6]:PORT` for an IPv6 host: the form `SocketAddress(parsing:)` reads.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
