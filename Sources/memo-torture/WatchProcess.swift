import Foundation

/// A `memo-client watch --json` process: the application client's own path (mirror, subscription, resume after
/// a reconnect). Every stdout line is kept, in order.
final class WatchProcess {
    let number: Int
    private let process = Process()
    private let lines = LockedBox<[String]>([])
    let stderrPath: String

    /// - Parameters:
    ///   - launcher: a command the client runs under (`ip netns exec NS`), empty to run it directly.
    ///   - extra: more options for `watch`.
    init(number: Int, binary: String, server: String, certs: String, directory: String, launcher: [String] = [],
         extra: [String] = []) throws {
        self.number = number
        process.executableURL = URL(fileURLWithPath: launcher.first ?? binary)
        process.arguments = Array(launcher.dropFirst()) + (launcher.isEmpty ? [] : [binary])
            + ["watch", "--json", "--server", server, "--certs", certs] + extra
        // Its certificates live a day: no expiry warning (nor a note of it in the user's cache folder).
        process.environment = ProcessInfo.processInfo.environment.merging(["MEMO_EXPIRY_WARNING": "0"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        stderrPath = directory + "/watch-\(number).log"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        let reader = output.fileHandleForReading
        let lines = self.lines
        Thread.detachNewThread {
            var pending = Data()
            // availableData returns what the pipe has; read(upToCount:) would wait for the whole count.
            while case let chunk = reader.availableData, !chunk.isEmpty {
                pending.append(chunk)
                var complete: [String] = []
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    complete.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
                if !complete.isEmpty { lines.update { $0.append(contentsOf: complete) } }
            }
        }
    }

    var output: [String] { lines.value }
    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    /// Waits until `condition` holds for the lines so far, at most `seconds`. - Returns: whether it did.
    func wait(seconds: Double, until condition: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(lines.value) { return true }
            pause(0.02)
        }
        return condition(lines.value)
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}

/// One line of `watch --json` read back: a change, or a memo of the first list (type `existing`).
struct WatchLine {
    /// The change's type; nil for a memo of the list (`existing`).
    var type: String?
    var revision: UInt64
    var id: String
    var content: String

    init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        if let type = object["type"] as? String {
            guard let memo = object["memo"] as? [String: Any],
                let revision = (object["revision"] as? NSNumber)?.uint64Value
            else { return nil }
            self.type = type == "existing" ? nil : type
            self.revision = revision
            id = memo["id"] as? String ?? ""
            content = memo["content"] as? String ?? ""
        } else {
            guard let revision = (object["revision"] as? NSNumber)?.uint64Value else { return nil }
            type = nil
            self.revision = revision
            id = object["id"] as? String ?? ""
            content = object["content"] as? String ?? ""
        }
    }
}
