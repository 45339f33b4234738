import Glibc
import Testing

@testable import MemoNet

@Suite("Net: socket addresses")
struct NetSocketAddressTests {
    @Test("IPv4 HOST:PORT parses and formats back the same")
    func ipv4RoundTrip() throws {
        let address = try SocketAddress(parsing: "127.0.0.1:8080")
        #expect(address.family == .inet)
        #expect(address.port == 8080)
        #expect(address.host == "127.0.0.1")
        #expect(address.description == "127.0.0.1:8080")
    }

    @Test("bracketed IPv6 parses and formats with brackets", arguments: [
        ("[::1]:443", "[::1]:443", UInt16(443)),
        ("[::]:0", "[::]:0", UInt16(0)),
        ("[2001:DB8::1]:65535", "[2001:db8::1]:65535", UInt16(65535)),
        ("[::ffff:10.0.0.1]:7", "[::ffff:10.0.0.1]:7", UInt16(7)),
    ])
    func ipv6RoundTrip(input: String, formatted: String, port: UInt16) throws {
        let address = try SocketAddress(parsing: input)
        #expect(address.family == .inet6)
        #expect(address.port == port)
        #expect(address.description == formatted)
    }

    @Test("localhost resolves to a loopback address with the port kept")
    func localhostResolves() throws {
        let all = try SocketAddress.resolve("localhost:7777")
        #expect(!all.isEmpty)
        for address in all {
            #expect(address.port == 7777)
            #expect(["127.0.0.1", "::1"].contains(address.host))
        }
        #expect(try SocketAddress(parsing: "localhost:7777") == all[0])
    }

    @Test("malformed addresses are rejected with a message naming the input", arguments: [
        "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:8x", ":80", "::1:80",
        "[::1:80", "[]:80", "[127.0.0.1]:80", "1.2.3.4:+80",
    ])
    func malformedRejected(input: String) {
        #expect(throws: NetError.self) { try SocketAddress(parsing: input) }
        do {
            _ = try SocketAddress(parsing: input)
        } catch {
            #expect(error.errno == 0)
            #expect(!error.message.isEmpty)
        }
    }

    @Test("an unknown host name fails with getaddrinfo's message")
    func unknownHostFails() {
        #expect(throws: NetError.self) { try SocketAddress(parsing: "no-such-host.invalid:80") }
    }

    @Test("equal addresses are equal and hash alike; different ports are not equal")
    func equality() throws {
        let a = try SocketAddress(parsing: "10.1.2.3:80")
        let b = try SocketAddress(parsing: "10.1.2.3:80")
        let c = try SocketAddress(parsing: "10.1.2.3:81")
        #expect(a == b)
        #expect(Set([a, b, c]).count == 2)
        #expect(a != c)
    }

    @Test("NetError carries errno, strerror text and the operation")
    func errorDescription() {
        let error = NetError(errno: ECONNREFUSED, operation: "connect(127.0.0.1:1)")
        #expect(error.message == "Connection refused")
        #expect(error.description == "connect(127.0.0.1:1): Connection refused (errno 111)")
    }
}
