import Foundation
import MemoNet
import MemoTestSupport
import Testing

@Suite("Server: event loops from the CPUs it may use")
struct LoopCountTests {
    /// The CPUs listed in the process's own `Cpus_allowed_list` (what the kernel says, counted independently).
    private func allowedCPUs(_ pid: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        return line.dropFirst("Cpus_allowed_list:".count).split(separator: ",").reduce(0) { total, part in
            let bounds = part.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
            return total + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 1)
        }
    }

    @Test func availableCPUsIsTheAffinityMask() throws {
        #expect(AvailableCPUs.count == (try allowedCPUs("self")))
    }

    /// A server confined by `taskset` to one CPU runs one loop; `--threads` still overrides the default.
    @Test(arguments: [([String](), 1), (["--threads", "3"], 3)])
    func serverUnderTasksetRunsOneLoopPerAllowedCPU(extra: [String], loops: Int) throws {
        let directory = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        process.arguments = ["-c", "0", builtExecutable("memo-server"), "serve", "--listen", "127.0.0.1:0",
                             "--store", "memory", "--certs", directory.path + "/certs"] + extra
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        // The line comes once the loops run (or never: then end of file, and the expectation below fails).
        let line = String(decoding: output.fileHandleForReading.readData(ofLength: 13), as: UTF8.self)
        #expect(line == "listening on ")
        let pid = String(process.processIdentifier)  // taskset execs the server: same process
        #expect(try allowedCPUs(pid) == 1)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
        #expect(names.filter { $0.hasPrefix("memo-io-") }.count == loops)
    }
}
