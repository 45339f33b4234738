import ClientTestSupport
import Foundation
import Glibc
import MemoClientCLI
import MemoModel
import MemoNet
import MemoTestSupport
import ServerTestSupport
import Testing

/// Runs `command` under /bin/sh with the built binaries first on PATH and `environment` added (MEMO_SERVER and
/// MEMO_CERTS name the server), so that redirections, pipes and `ulimit` are the shell's own.
func shell(
    _ command: String, _ environment: [String: String] = [:], stdin: String? = nil
) throws -> (status: Int32, out: String, err: String) {
    var merged = ProcessInfo.processInfo.environment
    let binaries = (builtExecutable("memo-client") as NSString).deletingLastPathComponent
    merged["PATH"] = binaries + ":" + (merged["PATH"] ?? "/usr/bin:/bin")
    // The test certificates live a day: without this every command's stderr would open with the expiry warning.
    merged["MEMO_EXPIRY_WARNING"] = "0"
    for (name, value) in environment { merged[name] = value }
    return try runTool("/bin/sh", ["-c", command], environment: merged, stdin: stdin)
}

/// The environment that points memo-client at `server`.
func clientEnvironment(_ server: TestServer) -> [String: String] {
    ["MEMO_SERVER": server.address.description, "MEMO_CERTS": server.certificates.path]
}

/// A memo-client process whose standard input is a pipe the test writes to.
final class PipedClient {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()

    init(_ arguments: [String], environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: builtExecutable("memo-client"))
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged["MEMO_EXPIRY_WARNING"] = "0"
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Writes `bytes` with write(2) until done or the reader is gone. - Returns: how many bytes it took.
    func write(_ bytes: [UInt8]) -> Int {
        let fd = input.fileHandleForWriting.fileDescriptor
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += written
        }
        return offset
    }

    func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for the exit (polling, with a deadline). - Returns: status, stdout, stderr; nil status after `seconds`.
    func finish(seconds: Double = 60) -> (status: Int32?, out: String, err: String) {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return (nil, "", "")
        }
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}

@Suite("memo-client scripting tells the truth: output, input, arguments, round trips, watch, import", .serialized)
struct ClientScriptingTests {
    init() {
        // A pipe whose reader left must give EPIPE to the test's writes, not end the test process.
        signal(SIGPIPE, SIG_IGN)
    }

    static func addMemos(_ count: Int, to server: TestServer, size: Int = 100) throws {
        let lines = (0..<count).map { index in
            MemoJSON.object(Memo(id: UUID(), content: "memo \(index) " + String(repeating: "x", count: size),
                                 insertMicros: 1_700_000_000_000_000, updateMicros: 1_700_000_000_000_000,
                                 revision: 1))
        }.joined(separator: "\n") + "\n"
        let result = try runClient(["import", "-"], server: server.address.description,
                                   certs: server.certificates.path, stdin: lines)
        #expect(result.status == 0, "\(result.err)")
    }

    @Test func aFailedWriteToStandardOutputEndsTheCommandWithExitOneAndTheReason() throws {
        let server = try TestServer()
        defer { server.stop() }
        try Self.addMemos(30, to: server)
        let environment = clientEnvironment(server)
        for command in ["export", "list", "list --json"] {
            let full = try shell("memo-client \(command) > /dev/full", environment)
            #expect(full.status == 1, "\(command)")
            #expect(full.err == "memo-client: cannot write to standard output: No space left on device\n", "\(command)")
        }
        let id = try #require(try runClient(["list"], server: server.address.description,
                                            certs: server.certificates.path).out.split(separator: "\t").first)
        let show = try shell("memo-client show \(id) > /dev/full", environment)
        #expect(show.status == 1)
        #expect(show.err == "memo-client: cannot write to standard output: No space left on device\n")

        // A file size limit: write(2) fails with EFBIG (SIGXFSZ is ignored), and the cut-off backup is not a success.
        try withTemporaryDirectory { directory in
            let limited = try shell("ulimit -f 1; memo-client export > \(directory)/backup.jsonl", environment)
            #expect(limited.status == 1)
            #expect(limited.err == "memo-client: cannot write to standard output: File too large\n")
        }
        // A reader that went away is still not an error.
        let head = try shell("memo-client export | (head -1 > /dev/null; exec 0<&-); echo", environment)
        #expect(head.status == 0 && head.err.isEmpty)
    }

    @Test func endlessStandardInputIsReadOnlyUpToTheLimitAndRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try PipedClient(["add", "-"], environment: clientEnvironment(server))
        // 16 MB offered: the client reads 65,538 bytes and exits; the pipe holds at most its buffer beyond that.
        let taken = client.write([UInt8](repeating: UInt8(ascii: "y"), count: 16 << 20))
        client.closeInput()
        let result = client.finish()
        #expect(result.status == 1)
        #expect(result.err == "memo-client: content is over the limit of 65536 bytes (standard input holds more "
            + "than 65537; reading stopped there)\n")
        #expect(taken < 1 << 20, "the client took \(taken) bytes")
        #expect(server.store.revision == 0)
    }

    @Test func anArgumentThatIsNotUTF8IsRefusedLikeStandardInput() throws {
        let server = try TestServer()
        defer { server.stop() }
        let environment = clientEnvironment(server)
        let argument = try shell("memo-client add \"$(printf 'bad \\377')\"", environment)
        #expect(argument.status == 1)
        #expect(argument.err == "memo-client: invalid argument: argument 2 is not valid UTF-8\n")
        let piped = try shell("printf 'bad \\377' | memo-client add -", environment)
        #expect(piped.status == 1)
        #expect(piped.err == "memo-client: invalid argument: standard input is not valid UTF-8\n")
        #expect(server.store.revision == 0)
    }

    @Test(arguments: ["text", "text\n", "text\n\n", "", "\n", "crlf\r\n", "tail\r"])
    func showPipedIntoEditGivesBackTheSameBytes(content: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let environment = clientEnvironment(server)
        // add - drops one final newline: the content plus one newline stores the content.
        let added = try runClient(["add", "--allow-empty", "--json", "-"], server: server.address.description,
                                  certs: server.certificates.path, stdin: content + "\n")
        let record = try MemoJSON.record(fromLine: added.out.trimmingCharacters(in: .newlines))
        #expect(Array(record.content.utf8) == Array(content.utf8))
        let id = record.id.uuidString.lowercased()
        // Piped, show prints the bytes and one newline.
        let shown = try shell("memo-client show \(id) | od -An -tx1", environment)
        let expected = Array((content + "\n").utf8).map { String(format: "%02x", $0) }
        #expect(shown.out.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init) == expected)
        for _ in 0..<3 {
            let edited = try shell("memo-client show \(id) | memo-client edit --allow-empty \(id) -", environment)
            #expect(edited.status == 0, "\(edited.err)")
        }
        let after = try runClient(["show", "--json", id], server: server.address.description,
                                  certs: server.certificates.path)
        let final = try MemoJSON.record(fromLine: after.out.trimmingCharacters(in: .newlines))
        #expect(Array(final.content.utf8) == Array(content.utf8))
        #expect(final.revision == (record.revision ?? 0) + 3)
    }

    @Test func watchEndsOnceItsReaderIsGoneWithoutWaitingForAChange() throws {
        let server = try TestServer()
        defer { server.stop() }
        try Self.addMemos(5, to: server)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(builtExecutable("memo-client")) watch --json | head -3 > /dev/null"]
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in clientEnvironment(server) { environment[name] = value }
        process.environment = environment
        try process.run()
        // No change is made: the watch must notice the reader left by itself.
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        let ended = !process.isRunning
        if !ended { kill(-process.processIdentifier, SIGKILL); kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(ended, "watch | head -3 still running 30 s after head exited")
        #expect(process.terminationStatus == 0)
    }

    @Test func watchSaysWhenItLosesAndRegainsTheServerEvenWhenPiped() throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path]
        let first = try ServerProcess(arguments: arguments + ["--listen", "127.0.0.1:0"], directory: data)
        let address = first.address
        _ = try runClient(["add", "one"], server: address, certs: certificates.path)
        let watch = try ClientProcess(["watch", "--server", address, "--certs", certificates.path], directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        try waitUntil("the lost connection on stderr", seconds: 30) { watch.stderr.contains("reconnecting") }
        let second = try ServerProcess(arguments: arguments + ["--listen", address], directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        try waitUntil("the reconnect on stderr", seconds: 30) { watch.stderr.contains("reconnected") }
        let lines = watch.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("memo-client: connection lost (") == true, "\(lines)")
        #expect(lines.first?.hasSuffix("); reconnecting") == true, "\(lines)")
        #expect(lines.last == "memo-client: reconnected to \(address) at revision 1", "\(lines)")
    }

    @Test func watchSinceARevisionPrintsOnlyTheChangesAfterIt() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        for word in ["one", "two", "three"] { _ = try runClient(["add", word], server: address, certs: certs) }
        let data = try TemporaryDirectory()
        let watch = try ClientProcess(["watch", "--since", "1", "--server", address, "--ca", certs + "/ca.crt",
                                       "--cert", certs + "/client.crt", "--key", certs + "/client.key"],
                                      directory: data)
        defer { watch.stop() }
        let first = try watch.waitForLines(2)
        #expect(first.map { $0.split(separator: "\t")[2] } == ["2", "3"])
        #expect(first.map { $0.split(separator: "\t")[0] } == ["created", "created"])
        _ = try runClient(["add", "four"], server: address, certs: certs)
        let all = try watch.waitForLines(3)
        #expect(all[2].hasPrefix("created\t") && all[2].hasSuffix("\tfour"), "\(all)")
        #expect(watch.lines.count == 3)

        let ahead = try runClient(["watch", "--since", "99"], server: address, certs: certs)
        #expect(ahead.status == 1)
        #expect(ahead.err == "memo-client: revision 99 is ahead of the server, which is at revision 4\n")
    }

    @Test func addWithAnIDIsIdempotentAndQuietPrintsNothing() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        let id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        let first = try runClient(["add", "--id", id, "hello"], server: address, certs: certs)
        #expect(first.status == 0)
        #expect(first.out.hasPrefix(id + "\t1\t"))
        let again = try runClient(["add", "--id", id, "hello"], server: address, certs: certs)
        #expect(again.status == 0)
        #expect(again.out == first.out)
        #expect(server.store.revision == 1)
        let other = try runClient(["add", "--id", id, "other"], server: address, certs: certs)
        #expect(other.status == 4)
        #expect(other.err == "memo-client: memo \(id) already exists with different content (revision 1)\n")
        let bad = try runClient(["add", "--id", "nope", "x"], server: address, certs: certs)
        #expect(bad.status == 2)
        #expect(bad.err.hasPrefix("memo-client: --id takes a UUID, not 'nope'\n"))

        let quiet = try runClient(["add", "--quiet", "shh"], server: address, certs: certs)
        #expect(quiet.status == 0)
        #expect(quiet.out.isEmpty && quiet.err.isEmpty)
        #expect(server.store.revision == 2)
        let quietEdit = try runClient(["edit", "-q", id, "changed"], server: address, certs: certs)
        #expect(quietEdit.status == 0 && quietEdit.out.isEmpty)
        // A failure still says so.
        let quietMissing = try runClient(["rm", "--quiet", "ffffffff"], server: address, certs: certs)
        #expect(quietMissing.status == 3)
        #expect(!quietMissing.err.isEmpty)
        let notForList = try runClient(["list", "--quiet"], server: address, certs: certs)
        #expect(notForList.status == 2)
    }

    @Test func importStopsAfterMaxErrorsReportsInLineOrderAndDryRunSendsNothing() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        // `yes | import -` stops after 100 bad lines instead of reporting every one.
        // (200,000 lines, so that a client without the limit ends too; stderr to a file, which nobody must drain.)
        let directory = try TemporaryDirectory()
        let endless = try shell(
            "yes 2>/dev/null | head -n 200000 | memo-client import - 2>\(directory.path)/err", clientEnvironment(server))
        #expect(endless.status == 1)
        let lines = try String(contentsOfFile: directory.path + "/err", encoding: .utf8).split(separator: "\n")
            .map(String.init)
        #expect(lines.count == 101, "\(lines.suffix(2))")
        let note = "memo-client: stopped after 100 bad lines (--max-errors 100); the lines after line 100 were not read"
        #expect(lines.last == note, "\(Array((lines.last ?? "").utf8).suffix(8))")
        #expect(endless.out == "created 0\tunchanged 0\tconflicts 0\tinvalid 100\tfailed 0\n")
        let three = try shell("yes 2>/dev/null | head -n 200000 | memo-client import --max-errors 3 - 2>&1 >/dev/null",
                              clientEnvironment(server))
        #expect(three.out.split(separator: "\n").count == 4)

        // Errors come in line order: line 1 is refused by the server (a conflict), line 2 at once by the client.
        let id = UUID()
        _ = try runClient(["add", "--id", id.uuidString, "original"], server: address, certs: certs)
        let conflicting = MemoJSON.object(Memo(id: id, content: "other", insertMicros: 1_700_000_000_000_000,
                                               updateMicros: 1_700_000_000_000_000, revision: 1))
        let ordered = try runClient(["import", "-"], server: address, certs: certs,
                                    stdin: conflicting + "\nnot json\n")
        #expect(ordered.status == 4)
        let reported = ordered.err.split(separator: "\n")
        #expect(reported.count == 2)
        #expect(reported.first?.hasPrefix("memo-client: line 1: ") == true, "\(reported)")
        #expect(reported.last?.hasPrefix("memo-client: line 2: ") == true, "\(reported)")

        // A dry run reads and checks every line and sends nothing.
        let before = server.store.revision
        let valid = MemoJSON.object(Memo(id: UUID(), content: "fine", insertMicros: 1_700_000_000_000_000,
                                         updateMicros: 1_700_000_000_000_000, revision: 1))
        let dry = try runClient(["import", "--dry-run", "-"], server: address, certs: certs,
                                stdin: valid + "\n" + valid + "\n{\n")
        #expect(dry.status == 1)
        #expect(dry.out == "valid 2\tinvalid 1\n")
        #expect(dry.err == "memo-client: line 3: invalid argument: not a memo object (not valid JSON)\n")
        // No connection is needed for it.
        let offline = try runClient(["import", "--dry-run", "-"], server: "127.0.0.1:1", certs: certs, stdin: valid)
        #expect(offline.status == 0)
        #expect(offline.out == "valid 1\tinvalid 0\n")
        #expect(server.store.revision == before)
    }

    @Test func anImportCutOffByTheServerOrBySIGINTStillPrintsItsSummary() throws {
        let server = try TestServer()
        defer { server.stop() }
        let lines = ClientImportWatchTests.exportLines(10).split(separator: "\n").map { Array(($0 + "\n").utf8) }
        // SIGINT: the summary of what was done, exit 130.
        let interrupted = try PipedClient(["import", "-"], environment: clientEnvironment(server))
        for line in lines.prefix(5) { _ = interrupted.write(line) }
        try waitUntil("5 memos imported", seconds: 30) { server.store.revision == 5 }
        kill(interrupted.process.processIdentifier, SIGINT)
        let result = interrupted.finish()
        #expect(result.status == 130)
        // The server applied 5; an answer may still have been on its way when the signal came: said as such.
        let created = try #require(Self.created(in: result.out), "\(result.out)")
        #expect(result.out == "created \(created)\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
        #expect(result.err == "memo-client: interrupted after line 5" + Self.unanswered(5 - created) + "\n")

        // The server goes away mid-import: the counts, then why it stopped, with the failure's exit code.
        let proxy = try CuttingProxy(to: server.address)
        let cut = try PipedClient(["import", "--timeout", "1", "-"], environment: [
            "MEMO_SERVER": proxy.address, "MEMO_CERTS": server.certificates.path])
        for line in lines.suffix(5).prefix(3) { _ = cut.write(line) }
        try waitUntil("3 more memos imported", seconds: 30) { server.store.revision == 8 }
        proxy.stop()
        for line in lines.suffix(2) { _ = cut.write(line) }
        cut.closeInput()
        let stopped = cut.finish()
        #expect(stopped.status == 6, "\(stopped.err)")
        let done = try #require(Self.created(in: stopped.out), "\(stopped.out)")
        // Two true accounts, depending on which the client saw first. The connection's end: every line sent after
        // the last answer is unanswered, and the import stops at the first of them. Or each write's own deadline
        // (1 s): those lines are counted unknown, one message each, and the import goes on until a line cannot
        // reach the server; the lines sent without an answer are then those unknown ones.
        let unknown = Self.unknown(in: stopped.out)
        if unknown == 0 {
            #expect(stopped.out == "created \(done)\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
            #expect(stopped.err.hasSuffix("(import stopped at line \(done + 1))" + Self.unanswered(5 - done) + "\n"),
                    "\(stopped.err)")
        } else {
            #expect(stopped.out
                == "created \(done)\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\tunknown \(unknown)\n")
            #expect(stopped.err.hasSuffix(
                "(import stopped at line \(done + unknown + 1))" + Self.unanswered(unknown) + "\n"), "\(stopped.err)")
            #expect(stopped.err.components(separatedBy: ": outcome unknown: ").count - 1 == unknown, "\(stopped.err)")
        }
    }

    /// N from a summary's `unknown N` column; 0 without one.
    static func unknown(in summary: String) -> Int {
        guard let range = summary.range(of: "\tunknown ") else { return 0 }
        return Int(summary[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    /// N from a summary `created N\t...`.
    static func created(in summary: String) -> Int? {
        guard summary.hasPrefix("created ") else { return nil }
        return Int(summary.dropFirst("created ".count).prefix { $0.isNumber })
    }

    /// What an import that ended early says about lines sent without an answer.
    static func unanswered(_ count: Int) -> String {
        count == 0 ? "" : "; \(count) lines sent got no answer (they may or may not be applied: importing again is safe)"
    }

    @Test func importShowsProgressOnATerminalOnly() throws {
        let server = try TestServer()
        defer { server.stop() }
        try withTemporaryDirectory { directory in
            let file = directory + "/memos.jsonl"
            try ClientImportWatchTests.exportLines(50).write(toFile: file, atomically: true, encoding: .utf8)
            // script(1) gives the client a terminal for stdout and stderr.
            let onTerminal = try shell("script -qec 'memo-client import \(file)' /dev/null", clientEnvironment(server))
            #expect(onTerminal.out.contains("\r\u{1B}[Kimporting: "), "\(onTerminal.out)")
            #expect(onTerminal.out.contains("imported 50 new"), "\(onTerminal.out)")
            let piped = try runClient(["import", file], server: server.address.description,
                                      certs: server.certificates.path)
            #expect(piped.err.isEmpty)
            #expect(piped.out == "created 0\tunchanged 50\tconflicts 0\tinvalid 0\tfailed 0\n")
        }
    }

    @Test func aServeThatCannotListenLeavesNoCAKeysOrDatabaseBehind() throws {
        let busy = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        defer { busy.close() }
        let busyAddress = try busy.localAddress().description
        for listen in [busyAddress, "no-such-host.invalid:7420"] {
            try withTemporaryDirectory { directory in
                let result = try runTool("memo-server", [
                    "serve", "--listen", listen, "--store", "sqlite:\(directory)/data/memos.sqlite",
                    "--certs", "\(directory)/certs"])
                #expect(result.0 == 1, "\(listen)")
                let left = try FileManager.default.contentsOfDirectory(atPath: directory)
                #expect(left.isEmpty, "\(listen): \(left) left behind; \(result.2)")
            }
        }
        // What was there before is kept: a store and certificates from an earlier run.
        try withTemporaryDirectory { directory in
            let made = try runTool("memo-server", ["certs", "init", "--dir", "\(directory)/certs"])
            #expect(made.0 == 0)
            let before = try FileManager.default.contentsOfDirectory(atPath: directory + "/certs").sorted()
            let result = try runTool("memo-server", [
                "serve", "--listen", busyAddress, "--store", "sqlite:\(directory)/memos.sqlite",
                "--certs", "\(directory)/certs"])
            #expect(result.0 == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/certs").sorted() == before)
        }
    }
}
