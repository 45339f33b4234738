import Foundation
import Glibc
import MemoTestSupport
import Synchronization
import Testing

/// Runs `memo-client` with connection options for `server` and the named certificate.
package func runClient(
    _ arguments: [String], server: String, certs: String, name: String = "client", stdin: String? = nil
) throws -> (status: Int32, out: String, err: String) {
    let connection = ["--server", server, "--ca", certs + "/ca.crt", "--cert", certs + "/\(name).crt",
                      "--key", certs + "/\(name).key"]
    let (status, out, err) = try runTool("memo-client", connection + arguments, stdin: stdin)
    return (status, out, err)
}

/// A long-running `memo-client` (watch) whose stdout lines are collected as they come.
package final class ClientProcess: Sendable {
    private struct State {
        var lines: [String] = []
        var ended = false
    }

    private let process: Process
    private let state = Mutex(State())
    private let changed = DispatchSemaphore(value: 0)
    package let stderrPath: String

    package init(_ arguments: [String], directory: TemporaryDirectory) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtExecutable("memo-client"))
        process.arguments = arguments
        // Test certificates live a day: no daily expiry warning on this client's stderr (see runTool).
        process.environment = ProcessInfo.processInfo.environment.merging(["MEMO_EXPIRY_WARNING": "0"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        stderrPath = directory.path + "/client-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        self.process = process
        try process.run()
        let reader = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                // availableData returns what one read gave (read(upToCount:) would wait for the whole count).
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                var lines: [String] = []
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
                if !lines.isEmpty {
                    state.withLock { $0.lines.append(contentsOf: lines) }
                    changed.signal()
                }
            }
            state.withLock { $0.ended = true }
            changed.signal()
        }
    }

    /// The process id, for signals (SIGSTOP/SIGCONT: a client that cannot follow for a while).
    package var processID: pid_t { process.processIdentifier }
    package var lines: [String] { state.withLock { $0.lines } }
    package var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until at least `count` lines arrived; throws after `seconds` or when the output ends first.
    package func waitForLines(_ count: Int, seconds: Double = 30) throws -> [String] {
        let deadline = DispatchTime.now() + seconds
        while true {
            let (lines, ended) = state.withLock { ($0.lines, $0.ended) }
            if lines.count >= count { return lines }
            if ended { throw ClientTestTimeout(what: "\(count) lines; output ended after \(lines): \(stderr)") }
            if changed.wait(timeout: deadline) == .timedOut {
                throw ClientTestTimeout(what: "\(count) lines; got \(lines.count): \(lines.suffix(3)) \(stderr)")
            }
        }
    }

    package func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }

    /// Polls until the process has exited by itself. - Returns: its exit status, or nil after `seconds`.
    package func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning {
            guard Date() < deadline else { return nil }
            usleep(20_000)
        }
        return process.terminationStatus
    }
}
