import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoSQLite
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// Runs a built executable that should exit by itself; one still running after `seconds` is killed and reported.
func runToExit(_ name: String, _ arguments: [String], seconds: Double = 30) throws -> (status: Int32?, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: builtExecutable(name))
    process.arguments = arguments
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    let timedOut = exited.wait(timeout: .now() + seconds) == .timedOut
    if timedOut {
        process.terminate()
        process.waitUntilExit()
    }
    let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (timedOut ? nil : process.terminationStatus, err)
}

@Suite("One server per SQLite file: a second one is refused, names the holder and writes nothing", .serialized)
struct StoreLockTests {
    @Test func aSecondServerOnTheSameFileRefusesToStartAndTouchesNothing() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let store = "sqlite:\(data.path)/memos.sqlite"
        let arguments = ["--store", store, "--certs", certificates.path, "--listen", "127.0.0.1:0"]
        let first = try ServerProcess(arguments: arguments, directory: data)
        var firstRunning = true
        defer {
            if firstRunning {
                first.signal(SIGTERM)
                _ = first.waitForExit()
            }
        }
        let client = try TestClient(address: try SocketAddress(parsing: first.address), identity: certificates.client())
        try client.hello()
        guard case .memo = try client.request(.create(id: nil, insertMicros: nil, content: "첫 서버")) else {
            Issue.record("the first server did not take a write")
            return
        }
        let files = ["memos.sqlite", "memos.sqlite-wal", "memos.sqlite-shm", "memos.sqlite.lock"]
        func contents() -> [Data?] { files.map { FileManager.default.contents(atPath: data.path + "/" + $0) } }
        let before = contents()

        // With a certificate folder of its own that holds no CA: a server that started would make one there.
        let otherCerts = data.path + "/other-certs"
        let second = try runToExit(
            "memo-server", ["serve", "--store", store, "--certs", otherCerts, "--listen", "127.0.0.1:0"])
        #expect(second.status == 1, "the second server did not exit 1: \(second.err)")
        #expect(second.err.contains("pid \(first.process.processIdentifier)"), "\(second.err)")
        #expect(second.err.contains("several servers need a shared store"), "\(second.err)")
        #expect(second.err.split(separator: "\n").count == 1, "\(second.err)")
        #expect(contents() == before, "the refused server changed the store's files")
        #expect(!FileManager.default.fileExists(atPath: otherCerts), "the refused server made certificates")

        // The first is unaffected, and once it stops the file is free again.
        #expect(try client.request(.ping(nonce: 1)) == .pong(nonce: 1))
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        firstRunning = false
        let third = try ServerProcess(arguments: arguments, directory: data)
        third.signal(SIGTERM)
        #expect(third.waitForExit() == 0)
        #expect(third.log.contains("at revision 1"))
    }

    @Test func aSecondStoreInOneProcessIsRefusedUntilTheFirstCloses() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let first = try SQLiteStore(path: path)
        _ = try await first.createMemo(content: "one")
        #expect {
            _ = try SQLiteStore(path: path)
        } throws: { error in
            guard case MemoError.storage(let message) = error else { return false }
            return message.contains("pid \(getpid())") && message.contains(path + ".lock")
        }
        first.close()
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.revision == 1)
        reopened.close()
    }
}
