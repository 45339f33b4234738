import Foundation
import MemoTestSupport
import Synchronization
import Testing

/// CI's short version of `memo-torture gray` (the long one is run by hand; see RELIABILITY.md). The harness
/// makes network namespaces and mounts a tmpfs, which needs root: CI runs as root, and there (CI=true) a
/// machine without root fails these tests instead of skipping them.
@Suite("memo-torture gray: gray failures in network namespaces, short version", .serialized,
       .enabled(if: getuid() == 0 || ProcessInfo.processInfo.environment["CI"] == "true",
                "needs root (network namespaces)"))
struct GrayTortureTests {
    /// The faults of the short run: every one.
    static let shortFaults = [
        "stop-server", "stop-postgres", "stop-feed-backend", "stop-writer-backend", "partition-server-database",
        "partition-server-clients", "disk-full", "below-history",
    ]

    @Test func everyFaultOfTheShortRunLosesNothingReportsTrulyAndLeavesWatchersGapFree() async throws {
        // The bound proper (9 s, 3 x the client's keepalive) is checked by the long run (RELIABILITY.md); here,
        // with the other suites on the same cores, a recovery may take up to the whole fault (10 s).
        let faults = Self.shortFaults.joined(separator: ",")
        let (status, out, err) = try await offThePool {
            try runTool("memo-torture", ["gray", "--short", "--bound", "10", "--faults", faults])
        }
        try expectAllPassed(status, out, err, runs: Self.shortFaults.count)
    }

    private func expectAllPassed(_ status: Int32, _ out: String, _ err: String, runs expected: Int) throws {
        let lines = out.split(separator: "\n").map(String.init)
        let summary = try #require(lines.first { $0.hasPrefix("gray summary: ") }, "\(out)\(err)")
        #expect(status == 0, "\(out)\(err)")
        #expect(summary.hasPrefix("gray summary: PASS;"), "\(summary)")
        for zero in ["lost 0,", "wrongly reported 0,", "watcher gaps 0"] {
            #expect(summary.contains(zero), "\(summary)")
        }
        let runs = lines.filter { $0.hasPrefix("gray: ") && ($0.contains(": PASS;") || $0.contains(": FAIL;")) }
        #expect(runs.count == expected, "\(out)")
        #expect(runs.allSatisfy { $0.contains(": PASS;") && !$0.contains("acknowledged 0,") }, "\(runs)")
        try expectNothingLeftBehind(out)
    }

    @Test func theChecksCountEveryPlantedFault() async throws {
        let (status, out, err) = try await offThePool {
            try runTool("memo-torture", ["gray", "--short", "--faults", "disk-full", "--check-the-checks"])
        }
        #expect(status == 0, "\(out)\(err)")
        #expect(out.contains("disk-full-1: check of the checks: PASS; every planted fault was found"), "\(out)")
        #expect(out.contains("gray check of the checks: PASS"), "\(out)")
        try expectNothingLeftBehind(out)
    }

    @Test func aGrayRunKilledWithSigkillLeavesNoNamespaceBehind() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtExecutable("memo-torture"))
        process.arguments = ["gray", "--short", "--faults", "stop-server"]
        let earlierOutputs = grayRunOutputs()
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until the network is made and PostgreSQL runs, then kill the harness.
        let text = LockedText()
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            while case let chunk = reader.availableData, !chunk.isEmpty { text.append(chunk) }
        }
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, !text.value.contains("gray: PostgreSQL on "), process.isRunning {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let prefix = try #require(networkPrefix(text.value), "\(text.value)")
        let data = try #require(text.value.split(separator: "\n").first { $0.hasPrefix("gray: PostgreSQL on ") }?
            .components(separatedBy: "data in ").last)
        #expect(try namespaces(prefix).count > 5)
        #expect(!postgresProcesses(data).isEmpty)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // The watchdog notices within a second or so.
        let cleaned = Date().addingTimeInterval(60)
        while Date() < cleaned, try !namespaces(prefix).isEmpty { Thread.sleep(forTimeInterval: 0.2) }
        #expect(try namespaces(prefix).isEmpty)
        while Date() < cleaned, !postgresProcesses(data).isEmpty { Thread.sleep(forTimeInterval: 0.2) }
        #expect(postgresProcesses(data).isEmpty)
        while Date() < cleaned, FileManager.default.fileExists(atPath: data) { Thread.sleep(forTimeInterval: 0.2) }
        #expect(!FileManager.default.fileExists(atPath: data))
        // Nor the output file of a program it was running when killed (they have no name while one runs).
        #expect(grayRunOutputs().subtracting(earlierOutputs).isEmpty)
    }

    /// The harness's program output files in the temporary folder.
    private func grayRunOutputs() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        return Set(names.filter { $0.hasPrefix("memo-gray-run-") })
    }

    @Test func usageErrorsExitTwoAndTheFaultsAreListed() throws {
        #expect(try runTool("memo-torture", ["gray", "--faults", "no-such-fault"]).0 == 2)
        #expect(try runTool("memo-torture", ["gray", "--runs", "0"]).0 == 2)
        let (status, listed, _) = try runTool("memo-torture", ["gray", "--list"])
        #expect(status == 0)
        #expect(listed.split(separator: "\n") == [
            "stop-server", "stop-postgres", "stop-feed-backend", "stop-writer-backend", "partition-server-database",
            "partition-server-clients", "disk-full", "below-history",
        ])
    }

    /// After a run: none of its namespaces, no tmpfs of it mounted, no PostgreSQL of it running.
    private func expectNothingLeftBehind(_ out: String) throws {
        let prefix = try #require(networkPrefix(out), "\(out)")
        #expect(try namespaces(prefix).isEmpty)
        // This run's folder only: another run on the machine (a second checkout's suite) has its own mounts.
        let folder = try #require(runFolder(out), "\(out)")
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        #expect(!mounts.contains(folder + "/"), "\(mounts)")
    }

    /// The run's folder, from `gray: PostgreSQL on ADDRESS, data in FOLDER/pg/data`.
    private func runFolder(_ out: String) -> String? {
        guard let line = out.split(separator: "\n").first(where: { $0.hasPrefix("gray: PostgreSQL on ") }),
            let range = line.range(of: "data in "), let end = line.range(of: "/pg/data", options: .backwards)
        else { return nil }
        return String(line[range.upperBound..<end.lowerBound])
    }

    /// Processes whose command line names the data folder (the postmaster: `postgres -D DATA`).
    private func postgresProcesses(_ data: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
            guard Int(entry) != nil, let bytes = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else {
                return false
            }
            return String(decoding: bytes.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(data)
        }
    }

    private func networkPrefix(_ out: String) -> String? {
        guard let line = out.split(separator: "\n").first(where: { $0.hasPrefix("gray: network ") }),
            let word = line.split(separator: " ").dropFirst(2).first, word.hasSuffix("-*:")
        else { return nil }
        return String(word.dropLast(3))
    }

    private func namespaces(_ prefix: String) throws -> [String] {
        let (status, out, err) = try runProgram("/usr/sbin/ip", ["netns", "list"])
        #expect(status == 0, "\(err)")
        return out.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
            .filter { $0.hasPrefix(prefix + "-") }
    }

    private func runProgram(_ path: String, _ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self),
                String(decoding: errData, as: UTF8.self))
    }
}

/// Text gathered by a reader thread.
private final class LockedText: Sendable {
    private let state = Mutex(Data())
    func append(_ data: Data) { state.withLock { $0.append(data) } }
    var value: String { state.withLock { String(decoding: $0, as: UTF8.self) } }
}
