import Foundation
import MemoNet
import MemoProbe

/// A `memo-server serve` process started by the torture harness: its address comes from the one stdout line,
/// its log goes to a file, and it can be killed with SIGKILL and started again with the same arguments.
// @unchecked Sendable: the process handle is behind a lock; the rest is immutable.
final class ServerRunner: @unchecked Sendable {
    let binary: String
    let arguments: [String]
    let logPath: String
    /// A command the server runs under (`ip netns exec NS`), empty to run it directly.
    let launcher: [String]
    private let current = LockedBox<Process?>(nil)
    private var process: Process? {
        get { current.value }
        set { current.value = newValue }
    }

    init(binary: String, arguments: [String], logPath: String, launcher: [String] = []) {
        self.launcher = launcher
        self.binary = binary
        self.arguments = arguments
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }

    var pid: Int32? { process?.processIdentifier }

    /// Starts the server and waits (at most 30 s) for `listening on HOST:PORT`.
    func start() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.first ?? binary)
        process.arguments = Array(launcher.dropFirst()) + (launcher.isEmpty ? [] : [binary]) + ["serve"] + arguments
        let output = Pipe()
        process.standardOutput = output
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        try process.run()
        self.process = process
        guard let line = readLine(output.fileHandleForReading, within: 30), line.hasPrefix("listening on ") else {
            process.terminate()
            process.waitUntilExit()
            throw TortureError("memo-server did not start; its log:\n\(self.log.suffix(2000))")
        }
        return String(line.dropFirst("listening on ".count))
    }

    /// SIGKILL, and wait until the process is gone.
    func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGTERM, and wait. - Returns: the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard let process else { return 0 }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    var isRunning: Bool { process?.isRunning ?? false }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The server's resident memory in KiB (nil when it is not running).
    var residentKiB: Int? { pid.flatMap { MemoProbe.residentKiB(of: "\($0)") } }
}

/// The first line from `handle`, or nil when it does not come within `seconds` (or the stream ends first).
private func readLine(_ handle: FileHandle, within seconds: Double) -> String? {
    let line = LockedBox<String?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        var data = Data()
        while let byte = try? handle.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            data.append(byte)
        }
        line.value = String(decoding: data, as: UTF8.self)
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return line.value
}

/// A loopback port that was free a moment ago (bound to port 0 and closed again).
func freeLoopbackPort() throws -> Int {
    let listener = try ListeningSocket.bind(try SocketAddress(parsing: "127.0.0.1:0"), backlog: 1)
    defer { listener.close() }
    return Int(try listener.localAddress().port)
}

/// A built executable next to this one (`memo-server`, `memo-client`).
func siblingExecutable(_ name: String) -> String {
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return me.deletingLastPathComponent().appendingPathComponent(name).path
}

/// A fresh private folder under the system's temporary directory.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var bytes = Array((NSTemporaryDirectory() + prefix + "-XXXXXX").utf8CString)
    guard mkdtemp(&bytes) != nil else { throw TortureError("mkdtemp failed: \(String(cString: strerror(errno)))") }
    return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A failure of the harness itself (not a finding about the server).
struct TortureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A value shared between threads behind a lock.
// @unchecked Sendable: every access goes through `lock`.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    func update<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.withLock { body(&stored) }
    }
}

/// Milliseconds of a duration, for reports.
func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
}

/// Blocks the calling thread (the harness is made of plain threads).
func pause(_ seconds: Double) {
    Thread.sleep(forTimeInterval: seconds)
}

/// One line on stdout, written at once (stdout is a pipe under the tests, where `print` would wait in a buffer).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += written
    }
}
