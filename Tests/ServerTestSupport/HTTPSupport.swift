import Foundation
import Glibc
import MemoNet
import MemoTestSupport
import Testing

/// An HTTP answer as a test reads it.
package struct HTTPAnswer: Sendable {
    package var status: Int
    package var head: String
    package var body: String
}

/// A blocking TCP connection to a loopback port, for speaking HTTP (or misbehaving) by hand.
package final class RawConnection {
    package let fd: Int32

    /// Connects to `address`; every read waits at most `timeout` seconds.
    package init(_ address: SocketAddress, timeout: Double = 10) throws {
        fd = try Self.connected(to: address, timeout: timeout)
    }

    /// A connected socket, or a throw with nothing left open (the descriptor is ours only once `init` has it).
    private static func connected(to address: SocketAddress, timeout: Double) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestHTTPError(message: "socket failed") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = address.port.bigEndian
        target.sin_addr.s_addr = inet_addr(address.host)
        let connected = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            let reason = errno
            Glibc.close(fd)
            throw TestHTTPError(message: "cannot connect to \(address): errno \(reason)")
        }
        return fd
    }

    deinit { Glibc.close(fd) }

    package func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw TestHTTPError(message: "send failed: errno \(errno)") }
            sent += count
        }
    }

    /// Everything until the peer closes (or the read timeout, which throws).
    package func readToEnd() throws -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if errno == ECONNRESET { throw TestHTTPError(message: "reset after \(data.count) bytes") }
                throw TestHTTPError(message: "no end within the read timeout (errno \(errno)); got \(data.count) bytes")
            }
            data += buffer[..<count]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether the peer closes (or resets) the connection without sending a byte.
    package func closedUnanswered() -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, 0)
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    /// Reads an HTTP answer that ends with the connection.
    package func readAnswer() throws -> HTTPAnswer {
        let text = try readToEnd()
        guard let split = text.range(of: "\r\n\r\n"),
              let status = Int(text.split(separator: " ").dropFirst().first ?? "") else {
            throw TestHTTPError(message: "not an HTTP answer (\(text.utf8.count) bytes): \(text.prefix(200))")
        }
        return HTTPAnswer(status: status, head: String(text[..<split.lowerBound]), body: String(text[split.upperBound...]))
    }
}

/// `GET path` (or another method) on a fresh connection, answered and closed.
package func httpRequest(_ address: SocketAddress, _ path: String, method: String = "GET") throws -> HTTPAnswer {
    let connection = try RawConnection(address)
    try connection.write(
        "\(method) \(path) HTTP/1.1\r\nHost: \(address)\r\nUser-Agent: memo-tests\r\nConnection: close\r\n\r\n")
    return try connection.readAnswer()
}

package struct TestHTTPError: Error, CustomStringConvertible {
    package let message: String
    package init(message: String) { self.message = message }
    package var description: String { message }
}

/// Whether the Prometheus tests run: when `promtool` and `prometheus` are installed, and always in CI (CI=true),
/// where a missing one then fails them rather than skipping them.
package let prometheusTestsEnabled: Bool = {
    (installedTool("promtool") != nil && installedTool("prometheus") != nil)
        || ProcessInfo.processInfo.environment["CI"] == "true"
}()
