import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoTestSupport
import ServerTestSupport
import Testing

/// A lost history made visible: `watch` says it resynced and prints the whole list, never a made-up diff.
@Suite("Client: watch across a lost history", .serialized)
struct ClientResyncTests {
    /// `--history 5`; a `watch --json` process stopped (SIGSTOP) while the server restarts and more than the
    /// history's worth of writes happen, among them a create then delete and two edits of one memo.
    @Test func watchAfterHistoryGonePrintsAResyncThenTheWholeListAndNoMadeUpChanges() async throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path, "--history", "5"]
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
        let kept = try await writer.create(content: "kept")

        let watch = try ClientProcess(
            ["watch", "--json", "--server", address, "--certs", certificates.path], directory: data)
        var watchStopped = false
        defer {
            if watchStopped { kill(watch.processID, SIGCONT) }
            watch.stop()
        }
        _ = try watch.waitForLines(1)
        let before = try await writer.create(content: "before")
        _ = try watch.waitForLines(2)

        // The watcher is away: it cannot follow while the server restarts and the history moves on.
        kill(watch.processID, SIGSTOP)
        watchStopped = true
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        firstStopped = true
        let second = try ServerProcess(arguments: arguments + ["--listen", address], directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        let edited = try await writer.create(content: "edited once")
        _ = try await writer.update(id: edited.id, content: "edited twice", expectedRevision: edited.revision)
        let twice = try await writer.get(id: edited.id)
        _ = try await writer.update(id: edited.id, content: "edited thrice", expectedRevision: twice.revision)
        let fleeting = try await writer.create(content: "fleeting")
        _ = try await writer.delete(id: fleeting.id)
        _ = try await writer.update(id: kept.id, content: "kept, edited", expectedRevision: kept.revision)
        for index in 0..<4 { _ = try await writer.create(content: "filler \(index)") }
        let away = try await writer.list()
        #expect(away.revision > before.revision + 5)

        kill(watch.processID, SIGCONT)
        watchStopped = false
        // The resync line, then the whole list as it is now.
        let lines = try watch.waitForLines(3 + away.memos.count)
        #expect(Array(lines[0..<2]) == [
            MemoJSON.event(type: "existing", revision: kept.revision, memo: kept),
            MemoJSON.event(type: "created", revision: before.revision, memo: before),
        ])
        #expect(lines[2] == "{\"event\":\"resync\",\"revision\":\(away.revision)}")
        let relisted = try lines[3..<(3 + away.memos.count)].map(WatchLine.init)
        #expect(relisted.map(\.type) == Array(repeating: "existing", count: away.memos.count))
        #expect(relisted.map(\.id) == away.memos.map { $0.id.uuidString.lowercased() })
        #expect(relisted.map(\.content) == away.memos.map(\.content))
        #expect(relisted.map(\.revision) == away.memos.map(\.revision))
        #expect(!relisted.contains { $0.content == "fleeting" })

        // Then changes again, from the resync's revision on, in order.
        let after = try await writer.create(content: "after")
        let all = try watch.waitForLines(4 + away.memos.count)
        #expect(all.count == 4 + away.memos.count)
        let change = try WatchLine(all[3 + away.memos.count])
        #expect(change.type == "created")
        #expect(change.revision == after.revision)
        #expect(change.revision > away.revision)
        // Nothing was made up: no created, updated or deleted line for a change the watcher never saw.
        let changeLines = try all.filter { !$0.hasPrefix("{\"event\"") }.map(WatchLine.init).filter {
            $0.type != "existing"
        }
        #expect(changeLines.map(\.revision) == [before.revision, after.revision])
    }
}
