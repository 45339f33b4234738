import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import MemoServer
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

@Suite("Client: resuming across restarts and lost answers", .serialized)
struct ClientResumeTests {
    @Test func watchJSONStaysGapFreeAndDuplicateFreeAcrossASIGTERMRestart() async throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path]
        let first = try ServerProcess(arguments: arguments + ["--listen", "127.0.0.1:0"], directory: data)
        var firstStopped = false
        defer {
            if !firstStopped {
                first.signal(SIGTERM)
                _ = first.waitForExit()
            }
        }
        let address = first.address
        var configuration = ClientConfiguration(server: address, certificatesDirectory: certificates.path)
        configuration.reconnect = ReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(500))
        let writer = try await MemoConnection.connect(configuration)
        defer { writer.close() }
        let seed = try await writer.create(content: "seed")

        let watch = try ClientProcess(
            ["watch", "--json", "--server", address, "--certs", certificates.path], directory: data)
        defer { watch.stop() }
        // The list first (one `existing` line), which also says the watch is subscribed.
        let listed = try watch.waitForLines(1)
        #expect(listed[0] == MemoJSON.event(type: "existing", revision: seed.revision, memo: seed))

        var expected: [(String, UUID, String)] = []
        func write(_ round: String) async throws {
            var made: [Memo] = []
            for i in 0..<8 {
                let memo = try await writer.create(content: "\(round) \(i)")
                made.append(memo)
                expected.append(("created", memo.id, memo.content))
            }
            let edited = try await writer.update(id: made[0].id, content: "\(round) edited")
            expected.append(("updated", edited.id, edited.content))
            let removed = try await writer.delete(id: made[1].id)
            expected.append(("deleted", removed.id, removed.content))
        }
        try await write("before")
        _ = try watch.waitForLines(1 + expected.count)

        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        firstStopped = true
        // Writes while nobody serves wait for the writer's reconnect; the server comes back on the same port.
        let second = try ServerProcess(arguments: arguments + ["--listen", address], directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        try await write("after")
        let sentinel = try await writer.create(content: "sentinel")
        expected.append(("created", sentinel.id, sentinel.content))

        let lines = try watch.waitForLines(1 + expected.count)
        let changes = try lines.dropFirst().map(WatchLine.init)
        // Gap-free and duplicate-free: revisions 2, 3, ... each once, in order, and they are our writes.
        #expect(changes.map(\.revision) == Array(2...UInt64(1 + expected.count)))
        #expect(changes.map(\.type) == expected.map(\.0))
        #expect(changes.map(\.id) == expected.map { $0.1.uuidString.lowercased() })
        #expect(changes.map(\.content) == expected.map(\.2))
        #expect(changes.last?.revision == sentinel.revision)
        // Nothing more arrives after the sentinel: one more write is the very next line.
        let last = try await writer.create(content: "last")
        let after = try watch.waitForLines(2 + expected.count)
        #expect(after.count == 2 + expected.count)
        #expect(try WatchLine(after.last!).revision == last.revision)
        #expect(!watch.stderr.contains("error"), "\(watch.stderr)")
    }

    @Test func aCreateWhoseAnswerIsLostIsRetriedWithoutASecondMemo() async throws {
        let server = try TestServer()
        let proxy = try CuttingProxy(to: server.address)
        defer {
            proxy.stop()
            server.stop()
        }
        var configuration = server.clientConfiguration()
        configuration.server = proxy.address
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        let states = Recorder<ConnectionState>()
        let watching = client.connectionState.subscribe { states.record($0) }
        defer { watching.cancel() }

        proxy.arm()
        let id = UUID()
        let memo = try await client.create(content: "exactly once", id: id)
        // The first answer was cut after the server committed; the client reconnected and sent the create again.
        #expect(proxy.cuts == 1)
        #expect(proxy.connections == 2)
        #expect(states.values.contains(.reconnecting))
        #expect(memo.id == id)
        #expect(memo.revision == 1)
        #expect(server.store.snapshot().memos == [memo])
        #expect(server.store.revision == 1)
    }

    @Test func anUpdateWhoseAnswerIsLostIsNotReportedAsAConflict() async throws {
        let server = try TestServer()
        let proxy = try CuttingProxy(to: server.address)
        defer {
            proxy.stop()
            server.stop()
        }
        var configuration = server.clientConfiguration()
        configuration.server = proxy.address
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        let memo = try await client.create(content: "one")
        proxy.arm()
        let updated = try await client.update(id: memo.id, content: "two", expectedRevision: memo.revision)
        #expect(proxy.cuts == 1)
        #expect(updated.content == "two")
        #expect(server.store.revision == 2)
        proxy.arm()
        let deleted = try await client.delete(id: memo.id, expectedRevision: 2, known: updated)
        #expect(proxy.cuts == 2)
        #expect(deleted.id == memo.id)
        #expect(server.store.revision == 3)
    }
}
