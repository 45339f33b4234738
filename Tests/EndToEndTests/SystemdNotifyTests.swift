import Foundation
import Glibc
import MemoTestSupport
import ServerTestSupport
import Testing

/// A notification as the bytes systemd compares.
private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The test's side of systemd's notification socket: a Unix datagram socket that memo-server's messages reach.
final class NotifySocket {
    let descriptor: Int32
    /// What NOTIFY_SOCKET says: the path, or `@name` for an abstract socket.
    let name: String

    /// Binds a socket at `path`, or at the abstract name `path` when it starts with `@`.
    init(_ path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        name = path
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        withUnsafeMutableBytes(of: &address) { raw in
            for (index, byte) in bytes.enumerated() { raw[offset + index] = byte }
        }
        let length = socklen_t(offset + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    deinit { close(descriptor) }

    /// The next datagram's bytes, or nil when none comes within `seconds`.
    func receive(seconds: Double) -> [UInt8]? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            let ready = poll(&poller, 1, Int32(left * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count >= 0 else { return nil }
            return Array(buffer[0..<count])
        }
    }

    /// The next datagram other than `WATCHDOG=1`, counting the watchdog ones it passes.
    func nextState(seconds: Double, watchdogs: inout Int) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(seconds)
        while let message = receive(seconds: deadline.timeIntervalSinceNow) {
            if message == bytes("WATCHDOG=1") {
                watchdogs += 1
                continue
            }
            return message
        }
        return nil
    }
}

@Suite("memo-server under systemd: sd_notify datagrams on NOTIFY_SOCKET", .serialized)
struct SystemdNotifyTests {
    @Test func readyWatchdogReloadingAndStoppingArriveInOrder() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let systemd = try NotifySocket(data.path + "/notify")
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = systemd.name
        environment["WATCHDOG_USEC"] = "200000"  // a WATCHDOG=1 every 0.1 s
        environment.removeValue(forKey: "WATCHDOG_PID")
        let server = try ServerProcess(
            arguments: ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path,
                        "--listen", "127.0.0.1:0"],
            directory: data, environment: environment)
        var stopped = false
        defer {
            if !stopped {
                server.signal(SIGKILL)
                _ = server.waitForExit()
            }
        }
        var watchdogs = 0
        #expect(systemd.nextState(seconds: 30, watchdogs: &watchdogs) == bytes("READY=1"))
        // Several watchdog pings while the server runs.
        let deadline = Date().addingTimeInterval(30)
        while watchdogs < 3, let message = systemd.receive(seconds: deadline.timeIntervalSinceNow) {
            #expect(message == bytes("WATCHDOG=1"))
            if message == bytes("WATCHDOG=1") { watchdogs += 1 }
        }
        #expect(watchdogs >= 3)

        server.signal(SIGHUP)
        let reloading = String(decoding: try #require(systemd.nextState(seconds: 30, watchdogs: &watchdogs)),
                               as: UTF8.self)
        let lines = reloading.split(separator: "\n").map(String.init)
        #expect(lines.first.map(bytes) == bytes("RELOADING=1"), "\(reloading)")
        #expect(lines.count == 2 && lines[1].hasPrefix("MONOTONIC_USEC=")
                    && UInt64(lines[1].dropFirst("MONOTONIC_USEC=".count)) != nil, "\(reloading)")
        #expect(systemd.nextState(seconds: 30, watchdogs: &watchdogs) == bytes("READY=1"))

        server.signal(SIGTERM)
        #expect(systemd.nextState(seconds: 30, watchdogs: &watchdogs) == bytes("STOPPING=1"))
        #expect(server.waitForExit() == 0)
        stopped = true
    }

    @Test func anAbstractSocketNameGetsReadyAndStopping() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let systemd = try NotifySocket("@memo-test-notify-\(UUID().uuidString)")
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = systemd.name
        environment.removeValue(forKey: "WATCHDOG_USEC")
        let server = try ServerProcess(
            arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0"],
            directory: data, environment: environment)
        #expect(systemd.receive(seconds: 30) == bytes("READY=1"))
        server.signal(SIGTERM)
        #expect(systemd.receive(seconds: 30) == bytes("STOPPING=1"))
        #expect(server.waitForExit() == 0)
    }
}
