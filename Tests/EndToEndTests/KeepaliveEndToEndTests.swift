import ClientTestSupport
import Foundation
import Glibc
import MemoTestSupport
import PostgresTestSupport
import ServerTestSupport
import Testing

/// The local ports of the established TCP connections to `port` on loopback, the clients' ends.
private func clientPorts(connectedTo port: String) throws -> Set<String> {
    // Each line: Recv-Q Send-Q Local Peer.
    Set(try establishedTCP("( dport = :\(port) )").compactMap { line in
        line.split(separator: " ").dropFirst(2).first?.split(separator: ":").last.map(String.init)
    })
}

/// A watcher on a server that stops answering (SIGSTOP: the process is frozen, its kernel still holds the TCP
/// connection up) notices through its keepalive ping, fails over or reconnects, and resumes without a gap.
@Suite("Keepalive: a watcher leaves a server that stopped answering", .serialized)
struct KeepaliveEndToEndTests {
    @Test(.enabled(if: postgresTestsEnabled))
    func watcherOnAStoppedServerMovesToTheOtherAndPrintsItsChangesGapFree() throws {
        let uri = try TestPostgres.shared().makeDatabase()
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", uri, "--certs", certificates.path, "--listen", "127.0.0.1:0"]
        let stopped = try ServerProcess(arguments: arguments, directory: data)
        defer {
            // Continued before it is asked to stop: a stopped process would not handle SIGTERM.
            stopped.signal(SIGCONT)
            stopped.signal(SIGTERM)
            _ = stopped.waitForExit()
        }
        let healthy = try ServerProcess(arguments: arguments, directory: data)
        defer {
            healthy.signal(SIGTERM)
            _ = healthy.waitForExit()
        }
        let writer = try NumberedWriter(address: healthy.address, certificates: certificates)
        try writer.write(1)
        // The watch starts on the first address, the server stopped below.
        let watch = try ClientProcess(
            ["watch", "--json", "--server", "\(stopped.address),\(healthy.address)", "--keepalive", "1",
             "--certs", certificates.path], directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        try writer.write(5)
        _ = try watch.waitForLines(1 + 5)
        // Still on the server about to be stopped (the only client of it), or the time measured below means nothing.
        let stoppedPort = try #require(stopped.address.split(separator: ":").last.map(String.init))
        #expect(try clientPorts(connectedTo: stoppedPort).count == 1)
        #expect(!watch.stderr.contains("lost"), "\(watch.stderr)")

        stopped.signal(SIGSTOP)
        let stoppedAt = ContinuousClock.now
        try writer.write(10)
        _ = try watch.waitForLines(1 + 5 + 1, seconds: 20)
        let firstChange = ContinuousClock.now - stoppedAt
        let lines = try watch.waitForLines(1 + 15, seconds: 20)
        let caughtUp = ContinuousClock.now - stoppedAt
        print("keepalive 1 s: SIGSTOP to the first change from the other server \(firstChange), all 10 \(caughtUp)")
        let changes = try lines.dropFirst().map(WatchLine.init)
        // Gap-free and duplicate-free: every revision once, in order, each the memo written.
        #expect(changes.map(\.revision) == Array(2...16))
        #expect(changes.map(\.id) == Array(writer.ids.dropFirst()))
        #expect(changes.allSatisfy { $0.type == "created" })
        // The target: on the other server and caught up within three keepalive intervals (the deadline above is
        // generous for a loaded machine; the figure printed is the measurement).
        #expect(caughtUp < .seconds(20))
    }

    @Test func watcherOfAServerStoppedLongerThanTheKeepaliveBoundResumesGapFreeAfterSIGCONT() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path,
                        "--listen", "127.0.0.1:0"], directory: data)
        defer {
            server.signal(SIGCONT)
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let port = try #require(server.address.split(separator: ":").last.map(String.init))
        let writer = try NumberedWriter(address: server.address, certificates: certificates)
        try writer.write(1)
        let before = try clientPorts(connectedTo: port)
        let watch = try ClientProcess(
            ["watch", "--json", "--server", server.address, "--keepalive", "1", "--certs", certificates.path],
            directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        try writer.write(3)
        _ = try watch.waitForLines(1 + 3)
        let watching = try clientPorts(connectedTo: port).subtracting(before)
        #expect(watching.count == 1, "\(watching)")

        server.signal(SIGSTOP)
        // The event waited for: the watcher gave its connection up (its ping went unanswered) and made a new one,
        // which the stopped server's kernel accepts into the backlog. Without a keepalive, it never does.
        let deadline = ContinuousClock.now + .seconds(20)
        var now = try clientPorts(connectedTo: port).subtracting(before)
        while !(now.isEmpty == false && now.isDisjoint(with: watching)), ContinuousClock.now < deadline {
            usleep(50_000)
            now = try clientPorts(connectedTo: port).subtracting(before)
        }
        #expect(!now.isEmpty && now.isDisjoint(with: watching), "still \(now), first \(watching)")

        server.signal(SIGCONT)
        try writer.write(4)
        let lines = try watch.waitForLines(1 + 7, seconds: 20)
        let changes = try lines.dropFirst().map(WatchLine.init)
        #expect(changes.map(\.revision) == Array(2...8))
        #expect(changes.map(\.id) == Array(writer.ids.dropFirst()))
    }
}
