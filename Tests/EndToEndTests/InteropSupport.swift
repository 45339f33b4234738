import Foundation
import Synchronization
import Testing

/// External TLS programs for the interop tests: `openssl` (s_client, s_server) and GnuTLS's `gnutls-cli` and
/// `gnutls-serv` (Debian's gnutls-bin, which `.ci/run` installs).
enum InteropTools {
    /// The program's path on PATH, if installed.
    static func path(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether the tests that need `name` run: when it is installed, and always in CI (CI=true), where a missing
    /// program is then a failure rather than a skipped test.
    static func runnable(_ name: String) -> Bool {
        path(name) != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }
}

/// A running external program: the test writes its stdin; its stdout and stderr are collected as they come.
final class PeerProcess: Sendable {
    private let process: Process
    private let input: FileHandle
    private let output = Mutex<[UInt8]>([])
    private let errors = Mutex<[UInt8]>([])

    init(_ tool: String, _ arguments: [String]) throws {
        let path = try #require(
            InteropTools.path(tool), "\(tool) is not installed (Debian: apt-get install gnutls-bin openssl)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        self.process = process
        input = stdin.fileHandleForWriting
        try process.run()
        collect(stdout.fileHandleForReading) { chunk in self.output.withLock { $0.append(contentsOf: chunk) } }
        collect(stderr.fileHandleForReading) { chunk in self.errors.withLock { $0.append(contentsOf: chunk) } }
    }

    private func collect(_ reader: FileHandle, into sink: @escaping @Sendable (Data) -> Void) {
        Thread.detachNewThread {
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                sink(chunk)
            }
        }
    }

    var stdout: [UInt8] { output.withLock { $0 } }
    var stderr: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }
    /// Everything printed so far, both streams, as text (binary frames included as they decode).
    var transcript: String { String(decoding: stdout, as: UTF8.self) + "\n--- stderr ---\n" + stderr }

    func write(_ bytes: [UInt8]) {
        try? input.write(contentsOf: Data(bytes))
    }

    func closeInput() {
        try? input.close()
    }

    /// Polls until `condition` holds or `seconds` pass. - Returns: whether it held.
    func waitUntil(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }

    /// Waits until stdout holds `bytes` `times` times.
    func waitForOutput(_ bytes: [UInt8], times: Int = 1, seconds: Double = 20) -> Bool {
        waitUntil(seconds: seconds) { occurrences(of: bytes, in: stdout) >= times }
    }

    func waitForExit(seconds: Double = 20) -> Bool {
        waitUntil(seconds: seconds) { !process.isRunning }
    }

    /// Kills the program (gnutls-serv does not end on SIGTERM while it waits for a client) and reaps it.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// How many times `needle` occurs in `haystack` (not overlapping).
func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
    var count = 0
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == needle[0], Array(haystack[index..<(index + needle.count)]) == needle {
            count += 1
            index += needle.count
        } else {
            index += 1
        }
    }
    return count
}

func occurrences(of text: String, in haystack: String) -> Int {
    haystack.components(separatedBy: text).count - 1
}
