import Foundation
@testable import MemoServer
import Testing

@Suite("systemd notifications: which watchdog to answer, which socket address")
struct SystemdNotifierTests {
    @Test func theWatchdogIsAnsweredAtHalfItsTimeoutOnlyForThisProcess() {
        let pid: pid_t = 4242
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "3000000"], pid: pid) == .seconds(1.5))
        #expect(SystemdNotifier.watchdogInterval(
            environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "4242"], pid: pid) == .seconds(1.5))
        #expect(SystemdNotifier.watchdogInterval(
            environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "1"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: [:], pid: pid) == nil)
    }

    @Test func anAbstractNameStartsWithAZeroByteAndAPathEndsWithOne() throws {
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        let abstract = try #require(SystemdNotifier.socketAddress("@sd"))
        #expect(Array(abstract[offset...]) == [0, UInt8(ascii: "s"), UInt8(ascii: "d")])
        let path = try #require(SystemdNotifier.socketAddress("/run/sd"))
        #expect(Array(path[offset...]) == Array("/run/sd".utf8) + [0])
        #expect(SystemdNotifier.socketAddress("relative") == nil)
        #expect(SystemdNotifier.socketAddress("/" + String(repeating: "x", count: 200)) == nil)
    }
}
