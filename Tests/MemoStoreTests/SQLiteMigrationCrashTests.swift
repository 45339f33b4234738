import Foundation
import MemoModel
@testable import MemoSQLite
import MemoStore
import MemoTestSupport
import Testing

@Suite("SQLite schema upgrade: kill -9 part way leaves version 1 intact")
struct SQLiteMigrationCrashTests {
    @Test func aServerKilledWhileUpgradingLeavesVersion1AndTheNextStartUpgrades() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let count = 150_000
        let memos = (0..<count).map { index in
            Memo(id: UUID(), content: "memo \(index) " + String(repeating: "x", count: 90), insertMicros: Int64(index),
                 updateMicros: Int64(index), revision: UInt64(index + 1))
        }
        try Version1File.write(path: path, memos: memos, changes: [], head: UInt64(count))

        let server = Process()
        server.executableURL = URL(fileURLWithPath: builtExecutable("memo-server"))
        server.arguments = [
            "serve", "--store", "sqlite:" + path, "--certs", directory.path + "/certs", "--listen", "127.0.0.1:0",
        ]
        let log = directory.path + "/server.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        server.standardError = FileHandle.nullDevice
        try server.run()
        // The upgrade copies every memo into the new table inside its transaction: once the log holds a few MiB
        // of it, the upgrade is under way and far from its commit.
        let deadline = Date().addingTimeInterval(120)
        var logged = 0
        while server.isRunning, Date() < deadline, logged < 2 << 20 {
            logged = ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
            usleep(2_000)
        }
        try #require(server.isRunning, "the server stopped before it was killed")
        try #require(logged >= 2 << 20, "the upgrade never started writing")
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
        #expect(!((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on"))

        #expect(try Version1File.describe(path: path) == (1, ["changes", "memos", "meta"]))
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try Version1File.describe(path: path) == (SQLiteSchema.version, ["changes", "meta"]))
        #expect(store.revision == UInt64(count))
        let list = try #require(store.memoList().value)
        #expect(list.count == count)
        #expect(list.first == memos.last)
        #expect(list.last == memos.first)
    }
}
