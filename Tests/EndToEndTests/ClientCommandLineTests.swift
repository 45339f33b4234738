import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import MemoServer
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

@Suite("memo-client against a server on loopback", .serialized)
struct ClientCommandLineTests {
    @Test func everyCommandWorksAndSaysSoInItsExitCode() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        func client(_ arguments: String..., stdin: String? = nil, name: String = "client") throws
            -> (status: Int32, out: String, err: String)
        {
            try runClient(arguments, server: address, certs: certs, name: name, stdin: stdin)
        }

        // add, with words joined and from stdin (one final newline dropped).
        let added = try client("add", "first", "memo")
        #expect(added.status == 0)
        let firstLine = added.out.split(separator: "\t")
        #expect(firstLine.count == 4)
        #expect(firstLine.last == "first memo\n")
        let firstID = String(firstLine[0])
        let piped = try client("add", "-", "--json", stdin: "두 번째\nsecond line\n")
        #expect(piped.status == 0)
        let record = try MemoJSON.record(fromLine: piped.out.trimmingCharacters(in: .newlines))
        #expect(record.content == "두 번째\nsecond line")
        #expect(record.revision == 2)

        // list: newest first, plain, filter, limit, JSON.
        let listed = try client("list")
        #expect(listed.status == 0)
        let rows = listed.out.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(rows.map { $0[3] } == ["두 번째", "first memo"])
        #expect(rows.map { $0[1] } == ["2", "1"])
        #expect(try client("list", "--filter", "FIRST").out.hasPrefix(firstID + "\t1\t"))
        #expect(try client("list", "--limit", "1").out.split(separator: "\n").count == 1)
        let json = try client("list", "--json").out.split(separator: "\n")
        #expect(json.count == 2)
        #expect(json[1].hasPrefix("{\"id\":\"\(firstID)\",\"content\":\"first memo\",\"insertDate\":\""))

        // show by prefix: the whole content.
        let shown = try client("show", String(record.id.uuidString.lowercased().prefix(6)))
        #expect(shown.status == 0)
        #expect(shown.out == "두 번째\nsecond line\n")

        // edit with --if-revision: right revision works, stale one is a conflict (4).
        let edited = try client("edit", String(firstID.prefix(8)), "edited", "--if-revision", "1")
        #expect(edited.status == 0)
        #expect(edited.out.split(separator: "\t")[1] == "3")
        let stale = try client("edit", firstID, "again", "--if-revision", "1")
        #expect(stale.status == 4)
        #expect(stale.err == "memo-client: memo \(firstID) is at revision 3, not the expected 1\n")

        // export, import twice: nothing changes the second time.
        let exported = try client("export")
        #expect(exported.status == 0)
        let exportLines = exported.out.split(separator: "\n")
        #expect(exportLines.count == 2)
        let directory = try TemporaryDirectory()
        let file = directory.path + "/export.jsonl"
        try exported.out.write(toFile: file, atomically: true, encoding: .utf8)
        let imported = try client("import", file)
        #expect(imported.status == 0)
        #expect(imported.out == "created 0\tunchanged 2\tconflicts 0\tinvalid 0\tfailed 0\n")
        #expect(try client("export").out == exported.out)

        // rm by prefix, then the memo is not found (3).
        let removed = try client("rm", String(firstID.prefix(8)), "--if-revision", "3")
        #expect(removed.status == 0)
        #expect(try client("show", firstID).status == 3)
        #expect(try client("rm", firstID).status == 3)
        #expect(try client("show", "ffffffff-ffff").status == 3)

        // Importing the export brings the deleted memo back with its id and insert date; again changes nothing.
        let back = try client("import", "-", stdin: exported.out)
        #expect(back.out == "created 1\tunchanged 1\tconflicts 0\tinvalid 0\tfailed 0\n")
        let restored = try client("show", firstID, "--json").out
        let original = try MemoJSON.record(fromLine: String(exportLines[1]))
        let again = try MemoJSON.record(fromLine: restored.trimmingCharacters(in: .newlines))
        #expect(again.content == original.content)
        #expect(again.insertMicros == original.insertMicros)
        #expect(try client("import", "-", stdin: exported.out).out.hasPrefix("created 0\tunchanged 2\t"))

        // A memo whose id exists with other content is a conflict: reported, the rest goes on, exit 4.
        let other = exported.out.replacingOccurrences(of: "\"content\":\"edited\"", with: "\"content\":\"other\"")
        let conflicted = try client("import", "-", stdin: other + "not json\n")
        #expect(conflicted.status == 4)
        #expect(conflicted.out == "created 0\tunchanged 1\tconflicts 1\tinvalid 1\tfailed 0\n")
        #expect(conflicted.err.contains("line 2: memo \(firstID) already exists with different content"))
        #expect(conflicted.err.contains("line 3:"))

        // An ambiguous prefix is a conflict (4): 17 memos share a first hex digit with another at least.
        for i in 0..<17 { _ = try client("add", "filler \(i)") }
        let ids = try client("list").out.split(separator: "\n").map { $0.prefix(1) }
        let shared = try #require(Dictionary(grouping: ids, by: { $0 }).first { $0.value.count > 1 }?.key)
        let ambiguous = try client("show", String(shared))
        #expect(ambiguous.status == 4)
        #expect(ambiguous.err.contains("matches"))

        // Content over the limit: another error (1).
        let huge = try client("add", "-", stdin: String(repeating: "x", count: 70_000))
        #expect(huge.status == 1)
        #expect(huge.err.hasPrefix("memo-client: content is over the limit of 65536 bytes"))

        // A read-only certificate may read but not write (5).
        #expect(try client("list", name: "reader").status == 0)
        let denied = try client("add", "nope", name: "reader")
        #expect(denied.status == 5)
        #expect(denied.err.contains("permission denied"))
    }

    @Test func usageErrorsExitTwoAndHelpListsTheExitCodes() throws {
        let (status, help, _) = try runTool("memo-client", ["--help"])
        #expect(status == 0)
        for code in ExitCode.allCases { #expect(help.contains("  \(code.rawValue)  \(code.meaning)")) }
        for arguments in [["bogus"], ["show"], ["add"], ["edit", "abc"], ["list", "--limit", "x"],
                          ["add", "x", "--filter", "y"], ["list", "--if-revision", "3"], ["list", "--nope"],
                          ["rm", "a", "--if-revision", "-1"], ["list", "--timeout", "0"], []] {
            let (status, out, err) = try runTool("memo-client", arguments)
            #expect(status == 2, "\(arguments)")
            #expect(out.isEmpty)
            #expect(err.hasPrefix("memo-client: "), "\(arguments)")
            #expect(err.hasSuffix("Try 'memo-client --help'.\n"), "\(arguments)")
        }
    }

    @Test func refusedTLSExitsFiveAndAnUnreachableServerSix() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let stranger = try TestCertificates()
        // Our certificate from a CA the server does not trust.
        let strangerCert: (status: Int32, out: String, err: String) = try runTool("memo-client", [
            "list", "--server", address, "--ca", server.certificates.path + "/ca.crt",
            "--cert", stranger.path + "/client.crt", "--key", stranger.path + "/client.key"])
        #expect(strangerCert.status == 5)
        #expect(strangerCert.err.hasPrefix("memo-client: TLS with \(address) failed: the server refused your certificate"))
        // A server certificate from a CA we do not trust.
        let strangerCA: (status: Int32, out: String, err: String) = try runTool("memo-client", [
            "list", "--server", address, "--ca", stranger.path + "/ca.crt",
            "--cert", server.certificates.path + "/client.crt", "--key", server.certificates.path + "/client.key"])
        #expect(strangerCA.status == 5)
        #expect(strangerCA.err.contains("the server's certificate is not signed by your CA"))
        // Missing certificate files.
        let missing: (status: Int32, out: String, err: String) = try runTool(
            "memo-client", ["list", "--server", address, "--certs", "/nonexistent"])
        #expect(missing.status == 5)
        #expect(missing.err.contains("no such file"))

        // Nobody listening: refused, retried until the timeout, then exit 6.
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let closedPort = try closed.localAddress().port
        closed.close()
        let refused = try runClient(
            ["list", "--timeout", "0.5"], server: "127.0.0.1:\(closedPort)", certs: server.certificates.path)
        #expect(refused.status == 6)
        #expect(refused.err == "memo-client: cannot reach 127.0.0.1:\(closedPort): connection refused\n")
        // Someone listening who never answers: the deadline.
        let silent = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        defer { silent.close() }
        let silentAddress = try silent.localAddress().description
        // The message names the deadline that ended it: no bound on the wall time is needed to tell.
        let timedOut = try runClient(
            ["list", "--timeout", "0.5"], server: silentAddress, certs: server.certificates.path)
        #expect(timedOut.status == 6)
        #expect(timedOut.err == "memo-client: no answer from \(silentAddress) within 0.5 s\n")
    }

    @Test func twoClientsEditingOneRevisionOneWinsTheOtherGetsFour() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path
        let added = try runClient(["add", "shared"], server: address, certs: certs)
        let id = String(added.out.prefix(36))
        let results = Mutex<[(Int32, String)]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let result = try? runClient(["edit", id, "writer \(index)", "--if-revision", "1"], server: address,
                                        certs: certs)
            results.withLock { $0.append((result?.status ?? -1, result?.err ?? "")) }
        }
        let statuses = results.withLock { $0.map(\.0) }.sorted()
        #expect(statuses == [0, 4])
        #expect(results.withLock { $0 }.contains { $0.1.contains("is at revision 2, not the expected 1") })
        let final = try runClient(["show", id, "--json"], server: address, certs: certs).out
        #expect(final.contains("\"revision\":2,\"author\":"))
    }
}
