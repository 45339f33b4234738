import Foundation
import MemoCLI
import MemoProbe

/// A memo-server process started on a store (`sqlite:PATH`, a PostgreSQL URI), timed from exec to its
/// `listening on` line.
final class StartedServer {
    let process = Process()
    let address: String
    let startMilliseconds: Double
    /// The server's CPU time (user + system, all threads) when it printed its line: on a busy machine a steadier
    /// figure than the wall time.
    let startCPUMilliseconds: Double

    init(binary: String, store: String, certs: String) throws {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--store", store, "--certs", certs]
        let output = Pipe()
        process.standardOutput = output
        // Kept in a file (a pipe nobody reads could fill and stop the server): its last line explains a failed start.
        let errors = NSTemporaryDirectory() + "memo-bench-server-\(UUID().uuidString).err"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errors) }
        process.standardError = FileHandle(forWritingAtPath: errors)
        let clock = ContinuousClock()
        let started = clock.now
        try process.run()
        // The server prints exactly one line on stdout, once it accepts connections.
        var line: [UInt8] = []
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                process.waitUntilExit()
                let said = (try? String(contentsOfFile: errors, encoding: .utf8))?.split(separator: "\n").last
                throw UsageError("memo-server exited with \(process.terminationStatus) before listening"
                    + (said.map { ": " + $0 } ?? ""))
            }
            line += chunk
        }
        startMilliseconds = (clock.now - started).milliseconds
        startCPUMilliseconds = Self.cpuMilliseconds(process.processIdentifier)
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("listening on ") else { throw UsageError("memo-server said '\(text)'") }
        address = String(text.dropFirst("listening on ".count))
    }

    private static func cpuMilliseconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmRSS in KiB.
    func rssKiB() -> Int { residentKiB(of: "\(process.processIdentifier)") ?? 0 }

    /// SIGTERM, then waits: the server closes the store (and its lock) before it exits.
    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
