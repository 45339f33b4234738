import Foundation
import Glibc
import MemoCore
import MemoNet
import MemoProbe
import MemoTestSupport
import MemoWire
import Testing

/// The memo a reply carries, or nil.
private func memo(_ reply: Message) -> Memo? {
    if case .memo(let memo) = reply { return memo }
    return nil
}

/// The local ports of the established TCP connections to `port` on loopback (`ss`), the clients' ends.
private func clientPorts(connectedTo port: String) throws -> Set<String> {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
    process.arguments = ["-tnH", "state", "established", "( dport = :\(port) )"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    // Each line: Recv-Q Send-Q Local Peer; the local address's port is the client's.
    return Set(String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
        line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2).first?
            .split(separator: ":").last.map(String.init)
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
        let writer = try TestClient(
            address: try SocketAddress(parsing: healthy.address), identity: certificates.client())
        try writer.hello()
        var made: [Memo] = []
        func write(_ count: Int) throws {
            for _ in 0..<count {
                made.append(try #require(memo(try writer.request(
                    .create(id: nil, insertMicros: nil, content: "memo \(made.count)")))))
            }
        }
        try write(1)
        // The watch starts on the first address, the server stopped below.
        let watch = try ClientProcess(
            ["watch", "--json", "--server", "\(stopped.address),\(healthy.address)", "--keepalive", "1",
             "--certs", certificates.path], directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        try write(5)
        _ = try watch.waitForLines(1 + 5)

        stopped.signal(SIGSTOP)
        let stoppedAt = ContinuousClock.now
        try write(10)
        _ = try watch.waitForLines(1 + 5 + 1, seconds: 20)
        let firstChange = ContinuousClock.now - stoppedAt
        let lines = try watch.waitForLines(1 + 15, seconds: 20)
        let caughtUp = ContinuousClock.now - stoppedAt
        print("keepalive 1 s: SIGSTOP to the first change from the other server \(firstChange), all 10 \(caughtUp)")
        let changes = try lines.dropFirst().map(WatchLine.init)
        // Gap-free and duplicate-free: every revision once, in order, each the memo written.
        #expect(changes.map(\.revision) == Array(2...16))
        #expect(changes.map(\.id) == made.dropFirst().map { $0.id.uuidString.lowercased() })
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
        let writer = try TestClient(
            address: try SocketAddress(parsing: server.address), identity: certificates.client())
        try writer.hello()
        var made: [Memo] = []
        func write(_ count: Int) throws {
            for _ in 0..<count {
                made.append(try #require(memo(try writer.request(
                    .create(id: nil, insertMicros: nil, content: "memo \(made.count)")))))
            }
        }
        try write(1)
        let before = try clientPorts(connectedTo: port)
        let watch = try ClientProcess(
            ["watch", "--json", "--server", server.address, "--keepalive", "1", "--certs", certificates.path],
            directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        try write(3)
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
        try write(4)
        let lines = try watch.waitForLines(1 + 7, seconds: 20)
        let changes = try lines.dropFirst().map(WatchLine.init)
        #expect(changes.map(\.revision) == Array(2...8))
        #expect(changes.map(\.id) == made.dropFirst().map { $0.id.uuidString.lowercased() })
    }
}
