import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import MemoTestSupport
import ServerTestSupport
import Synchronization
import Testing

@Suite("memo-client import from any path, empty memos, watch lines, error messages", .serialized)
struct ClientImportWatchTests {
    /// Export lines for `count` new memos.
    static func exportLines(_ count: Int, prefix: String = "imported") -> String {
        (0..<count).map { index in
            let micros = 1_700_000_000_000_000 + Int64(index)
            return MemoJSON.object(Memo(id: UUID(), content: "\(prefix) \(index)", insertMicros: micros,
                                        updateMicros: micros, revision: 1))
        }.joined(separator: "\n") + "\n"
    }

    @Test func importReadsPipesDevStdinDevNullAndProcessSubstitution() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        let empty = try runClient(["import", "/dev/null"], server: address, certs: certs)
        #expect(empty.status == 0, "\(empty.err)")
        #expect(empty.out == "created 0\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
        let viaDevice = try runClient(
            ["import", "/dev/stdin"], server: address, certs: certs, stdin: Self.exportLines(3))
        #expect(viaDevice.status == 0, "\(viaDevice.err)")
        #expect(viaDevice.out == "created 3\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")

        let directory = try TemporaryDirectory()
        let file = directory.path + "/export.jsonl"
        try Self.exportLines(2, prefix: "substituted").write(toFile: file, atomically: true, encoding: .utf8)
        let client = builtExecutable("memo-client")
        let script = "\"\(client)\" --server \(address) --certs \(certs) import <(cat \(file))"
        let substituted = try runTool("/usr/bin/bash", ["-c", script], environment: cleanEnvironment())
        #expect(substituted.status == 0, "\(substituted.err)")
        #expect(substituted.out == "created 2\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")

        let missing = try runClient(["import", directory.path + "/nope.jsonl"], server: address, certs: certs)
        #expect(missing.status == 1)
        #expect(missing.err == "memo-client: invalid argument: cannot read \(directory.path)/nope.jsonl: "
            + "No such file or directory\n")
    }

    @Test func importCreatesEachLineAsItArrivesWithoutWaitingForTheEnd() throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let fifo = directory.path + "/memos.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let outcome = Mutex<(status: Int32, out: String, err: String)?>(nil)
        let address = server.address.description
        let certs = server.certificates.path
        Thread.detachNewThread {
            let result = try? runClient(["import", fifo], server: address, certs: certs)
            outcome.withLock { $0 = result ?? (-1, "", "could not run") }
        }
        var writer = open(fifo, O_WRONLY)  // waits for the client to open it
        #expect(writer >= 0)
        // Closed on every way out, so that a failing test still lets the client see the end of its input.
        defer { if writer >= 0 { close(writer) } }
        let lines = Self.exportLines(2, prefix: "streamed").split(separator: "\n").map { $0 + "\n" }
        _ = lines[0].withCString { write(writer, $0, strlen($0)) }
        // The first memo is made while its writer still holds the pipe open: the input is read line by line.
        try waitUntil("the first line's memo") { server.store.revision >= 1 }
        _ = lines[1].withCString { write(writer, $0, strlen($0)) }
        close(writer)
        writer = -1
        try waitUntil("the import to finish") { outcome.withLock { $0 != nil } }
        let result = try #require(outcome.withLock { $0 })
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == "created 2\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
    }

    @Test func aReadOnlyCertificateImportingExitsFiveWithOneLine() throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try runClient(["import", "-"], server: server.address.description,
                                   certs: server.certificates.path, name: "reader", stdin: Self.exportLines(200))
        #expect(result.status == 5)
        #expect(result.err.split(separator: "\n").count == 1, "\(result.err)")
        #expect(result.err.hasPrefix("memo-client: permission denied: "))
        #expect(server.store.revision == 0)
    }

    @Test func emptyContentIsRefusedUnlessAllowed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        let cases: [([String], String?)] = [(["add", ""], nil), (["add", "-"], ""), (["add", "-"], "\n")]
        for (arguments, stdin) in cases {
            let refused = try runClient(arguments, server: address, certs: certs, stdin: stdin)
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.err.contains("the memo is empty") && refused.err.contains("--allow-empty"))
        }
        #expect(server.store.revision == 0)
        let allowed = try runClient(["add", "--allow-empty", "-"], server: address, certs: certs, stdin: "")
        #expect(allowed.status == 0, "\(allowed.err)")
        let id = String(allowed.out.prefix(36))
        #expect(try runClient(["edit", id, ""], server: address, certs: certs).status == 1)
        #expect(try runClient(["edit", id, "now", "text"], server: address, certs: certs).status == 0)
        #expect(try runClient(["list", "--allow-empty"], server: address, certs: certs).status == 2)
    }

    @Test func watchPrintsTheListAsExistingLinesAndADeleteWithItsTime() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        let added = try runClient(["add", "kept"], server: address, certs: certs)
        let first = added.out.split(separator: "\t").map(String.init)
        let directory = try TemporaryDirectory()
        for json in [false, true] {
            let watch = try ClientProcess(
                ["watch", "--server", address, "--certs", certs] + (json ? ["--json"] : []), directory: directory)
            defer { watch.stop() }
            let listed = try watch.waitForLines(1)
            if json {
                #expect(listed[0].hasPrefix("{\"type\":\"existing\",\"revision\":1,\"memo\":{\"id\":\"\(first[0])\""))
                continue
            }
            #expect(listed[0] == "existing\t\(first[0])\t1\t\(first[2])\tkept", "\(listed[0])")
            let gone = try runClient(["add", "gone"], server: address, certs: certs).out.split(separator: "\t")
            #expect(try runClient(["rm", String(gone[0])], server: address, certs: certs).status == 0)
            let lines = try watch.waitForLines(3)
            let created = lines[1].split(separator: "\t").map(String.init)
            let deleted = lines[2].split(separator: "\t").map(String.init)
            #expect(created.first == "created" && deleted.first == "deleted")
            #expect(deleted[1] == String(gone[0]) && deleted[2] == "3")
            // The delete's time, not the memo's last update.
            let createdAt = try #require(Timestamp.parse(created[3]))
            let deletedAt = try #require(Timestamp.parse(deleted[3]))
            #expect(deletedAt > createdAt, "\(lines)")
        }
    }

    @Test func errorMessagesDoNotShowSwiftTypesOrErrorDomains() throws {
        let server = try TestServer()
        defer { server.stop() }
        let input = "\"a string\"\n{\"id\":5}\n[1]\n{\"id\":\"x\",\"content\":null,\"insertDate\":\"y\"}\nnot json\n"
        let result = try runClient(["import", "-"], server: server.address.description,
                                   certs: server.certificates.path, stdin: input)
        #expect(result.status == 1)
        let lines = result.err.split(separator: "\n")
        #expect(lines.count == 5, "\(result.err)")
        for word in ["Dictionary", "Swift", "NSCocoa", "Expected to decode", "Array<", "Optional", "UInt64"] {
            #expect(!result.err.contains(word), "\(word) in \(result.err)")
        }
        #expect(lines[0] == "memo-client: line 1: invalid argument: not a memo object (expected a JSON object)")
        #expect(lines[1]
            == "memo-client: line 2: invalid argument: not a memo object (field \"id\" should be a string)")
        #expect(lines[3].contains("field \"content\" is null, not a string"), "\(lines[3])")
        #expect(lines[4] == "memo-client: line 5: invalid argument: not a memo object (not valid JSON)")
    }
}
