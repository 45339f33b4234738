import Foundation
import Glibc
import MemoNet
import MemoProbe
import MemoTestSupport
import MemoWire

/// A `memo-server serve` process; `address` is read from its one stdout line.
package final class ServerProcess {
    package let process = Process()
    package let address: String
    package let stderrPath: String

    /// - Parameters:
    ///   - environment: the server's environment (nil: the test's own).
    ///   - standardError: where its log goes (nil: a file in `directory`, which `log` reads).
    ///   - launcher: a program and its arguments that run the server (given its path and arguments last), as a
    ///     wrapper that restricts it would.
    package init(
        arguments: [String], directory: TemporaryDirectory, environment: [String: String]? = nil,
        standardError: FileHandle? = nil, launcher: [String] = []
    ) throws {
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = launcher.dropFirst() + [builtExecutable("memo-server"), "serve"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: builtExecutable("memo-server"))
            process.arguments = ["serve"] + arguments
        }
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        stderrPath = directory.path + "/server-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardError = try standardError ?? FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        // Wait for the line, with a deadline so that a server that never starts fails the test.
        let line = Recorder<String>()
        let ready = DispatchSemaphore(value: 0)
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            var data = Data()
            while let chunk = try? reader.read(upToCount: 1), !chunk.isEmpty {
                if chunk == Data("\n".utf8) { break }
                data.append(chunk)
            }
            line.record(String(decoding: data, as: UTF8.self))
            ready.signal()  // the line, or end of file when the server exits without one
        }
        _ = ready.wait(timeout: .now() + 30)
        guard let first = line.values.first, first.hasPrefix("listening on ") else {
            process.terminate()
            throw TestClient.Failure.timedOut("`listening on`; stderr: \(Self.read(stderrPath))")
        }
        address = String(first.dropFirst("listening on ".count))
    }

    package var log: String { Self.read(stderrPath) }

    package static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    package func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Asks the server to stop (SIGTERM) and waits for it to exit; returns its status.
    @discardableResult
    package func stop() -> Int32 {
        signal(SIGTERM)
        return waitForExit()
    }

    /// Waits for the process to exit and returns its status.
    package func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

