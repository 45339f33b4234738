import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

@Suite("memo-server as a process: shutdown, restart and crash", .serialized)
struct ServerProcessTests {
    @Test func sigtermSendsGoingAwayExitsZeroAndARestartFindsEveryMemo() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path]
        let first = try ServerProcess(arguments: arguments + ["--listen", "127.0.0.1:0"], directory: data)
        let address = try SocketAddress(parsing: first.address)
        let client = try TestClient(address: address, identity: certificates.client())
        try client.hello()
        var made: [Memo] = []
        for i in 0..<20 {
            guard case .memo(let memo) = try client.request(.create(id: nil, insertMicros: nil, content: "메모 \(i)"))
            else { throw TestClient.Failure.closed }
            made.append(memo)
        }
        try client.send(.subscribe(after: nil))
        first.signal(SIGTERM)
        let messages = try client.readUntilClosed()
        #expect(messages.contains { if case .goingAway(.shuttingDown, _) = $0 { true } else { false } })
        #expect(first.waitForExit() == 0)
        #expect(first.log.contains("stopped cleanly at revision 20"))
        #expect(first.log.contains("close conn=1"))

        // Same port again.
        let second = try ServerProcess(arguments: arguments + ["--listen", first.address], directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        #expect(second.address == first.address)
        let again = try TestClient(address: address, identity: certificates.client())
        try again.hello()
        #expect(try again.request(.list) == .memos(revision: 20, last: true, memos: made.reversed()))
    }

    @Test func everyAcknowledgedWriteSurvivesKillNine() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path]
        let first = try ServerProcess(arguments: arguments + ["--listen", "127.0.0.1:0"], directory: data)
        let address = try SocketAddress(parsing: first.address)
        let client = try TestClient(address: address, identity: certificates.client())
        try client.hello()
        // Pipelined: 100 creates in flight at once, so they share transactions.
        var ids: [UInt32] = []
        for i in 0..<100 { ids.append(try client.send(.create(id: nil, insertMicros: nil, content: "crash \(i)"))) }
        var acknowledged: [Memo] = []
        for id in ids {
            guard case .memo(let memo) = try client.receive({ $0.requestID == id }).1 else { continue }
            acknowledged.append(memo)
        }
        #expect(acknowledged.count == 100)
        first.signal(SIGKILL)
        _ = first.waitForExit()

        let second = try ServerProcess(arguments: arguments + ["--listen", "127.0.0.1:0"], directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        let again = try TestClient(address: try SocketAddress(parsing: second.address), identity: certificates.client())
        try again.hello()
        for memo in acknowledged {
            #expect(try again.request(.get(id: memo.id)) == .memo(memo))
        }
    }
}

@Suite("memo-server command line: certificates, help and usage errors")
struct ServerCommandLineTests {
    @Test func certsInitWritesPrivateKeysAndNeverOverwritesWithoutForce() throws {
        let directory = try TemporaryDirectory()
        let dir = directory.path + "/certs"
        let (status, out, _) = try runTool("memo-server", ["certs", "init", "--dir", dir, "--host", "memo.example"])
        #expect(status == 0)
        #expect(out.contains("DNS:memo.example"))
        for key in ["ca.key", "server.key", "client.key"] {
            let mode = try FileManager.default.attributesOfItem(atPath: dir + "/" + key)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(key)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: dir + "/ca.key"))
        let (again, _, error) = try runTool("memo-server", ["certs", "init", "--dir", dir])
        #expect(again == 1)
        #expect(error.contains("ca.crt") || error.contains("exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/ca.key")) == before)
        #expect(try runTool("memo-server", ["certs", "init", "--dir", dir, "--force"]).0 == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/ca.key")) != before)

        let (issued, issuedOut, _) = try runTool("memo-server", ["certs", "client", "alice", "--dir", dir, "--read-only"])
        #expect(issued == 0)
        #expect(issuedOut.contains("alice.crt") && issuedOut.contains("read-only"))
        #expect(try runTool("memo-server", ["certs", "client", "alice", "--dir", dir]).0 == 1)
        #expect(try runTool("memo-server", ["certs", "client", "../evil", "--dir", dir]).0 == 1)
    }

    @Test func helpDescribesEveryFlagAndUsageErrorsExitTwo() throws {
        let (status, help, _) = try runTool("memo-server", ["serve", "--help"])
        #expect(status == 0)
        for flag in ["--listen", "--store", "--certs", "--threads", "--max-connections", "--max-frame",
                     "--max-in-flight", "--max-outbound", "--handshake-timeout", "--frame-timeout", "--history",
                     "--storage-timeout", "--max-feed-lag"] {
            #expect(help.contains(flag), "\(flag)")
        }
        #expect(try runTool("memo-server", ["--help"]).1.contains("certs client NAME"))
        let (bad, _, error) = try runTool("memo-server", ["serve", "--listen"])
        #expect(bad == 2)
        #expect(error.contains("--listen needs a value"))
        #expect(try runTool("memo-server", ["serve", "--store", "postgres:x"]).0 == 2)
        #expect(try runTool("memo-server", ["frobnicate"]).0 == 2)
        // The PostgreSQL deadlines are bounded: a usage error that names the range.
        let (outOfRange, _, rangeError) = try runTool("memo-server", ["serve", "--storage-timeout", "0"])
        #expect(outOfRange == 2)
        #expect(rangeError.contains("--storage-timeout takes a number of seconds from 0.1 to 60, not '0'"),
                "\(rangeError)")
        #expect(try runTool("memo-server", ["serve", "--max-feed-lag", "abc"]).0 == 2)
    }
}
