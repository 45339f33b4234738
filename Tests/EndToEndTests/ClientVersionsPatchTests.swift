import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoPKI
import MemoTestSupport
import ServerTestSupport
import Testing

@Suite("memo-client log --patch, and export --versions replayed by import", .serialized)
struct ClientVersionsPatchTests {
    @Test func logPatchShowsEachVersionAsAUnifiedDiffAgainstTheOneBeforeNewestFirst() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        _ = try CertificateAuthority.issueClient(name: "bob", directory: certs, validity: .days(1))
        func run(_ name: String = "client", _ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: certs, name: name)
        }
        let id = try run("client", "add", "-o", "ids", "장보기\n우유\n계란").out.trimmingCharacters(in: .newlines)
        #expect(try run("bob", "edit", id, "장보기\n두유\n계란").status == 0)

        let log = try run("client", "log", id, "--patch")
        #expect(log.status == 0, "\(log.err)")
        let lines = log.out.components(separatedBy: "\n")
        #expect(lines[0].hasPrefix("2\t") && lines[0].contains("\tbob\tupdate\t장보기"), "\(log.out)")
        #expect(Array(lines[1...8]) == [
            "--- r1", "+++ r2", "@@ -1,3 +1,3 @@", " 장보기", "-우유", "+두유", " 계란",
            "\\ No newline at end of file",
        ], "\(log.out)")
        #expect(lines[9] == "")
        #expect(lines[10].hasPrefix("1\t") && lines[10].contains("\tclient\tcreate\t장보기"), "\(log.out)")
        #expect(Array(lines[11...17]) == [
            "--- /dev/null", "+++ r1", "@@ -0,0 +1,3 @@", "+장보기", "+우유", "+계란", "\\ No newline at end of file",
        ], "\(log.out)")

        // --limit 1 still diffs the version shown against the one before it; --json carries the patch.
        let one = try run("client", "log", id, "--patch", "--limit", "1", "--json")
        #expect(one.status == 0, "\(one.err)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(one.out.utf8)) as? [[String: Any]])
        #expect(objects.count == 1)
        #expect((objects[0]["patch"] as? String)?.hasPrefix("--- r1\n+++ r2\n@@ -1,3 +1,3 @@\n") == true)
    }

    @Test func exportVersionsCarriesAuthorsAndHistoryAndImportReplaysItOnceThenChangesNothing() throws {
        let source = try TestServer()
        defer { source.stop() }
        let certs = source.certificates.path
        _ = try CertificateAuthority.issueClient(name: "bob", directory: certs, validity: .days(1))
        func run(_ server: TestServer, _ name: String = "client", _ arguments: String...) throws
            -> (status: Int32, out: String, err: String)
        {
            try runClient(arguments, server: server.address.description, certs: server.certificates.path, name: name)
        }
        let id = try run(source, "client", "add", "-o", "ids", "첫 판").out.trimmingCharacters(in: .newlines)
        #expect(try run(source, "bob", "edit", id, "두 번째 판").status == 0)
        #expect(try run(source, "client", "edit", id, "세 번째 판").status == 0)

        // Plain export carries the last change's author; --versions the whole kept history.
        let plain = try run(source, "client", "export")
        #expect(plain.out.contains("\"author\":{\"name\":\"client\","), "\(plain.out)")
        let exported = try run(source, "client", "export", "--versions")
        #expect(exported.status == 0, "\(exported.err)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(exported.out.utf8)) as? [String: Any], "\(exported.out)")
        let versions = try #require(object["versions"] as? [[String: Any]])
        #expect(versions.compactMap { $0["content"] as? String } == ["세 번째 판", "두 번째 판", "첫 판"])
        let authors = versions.compactMap { ($0["author"] as? [String: Any])?["name"] as? String }
        #expect(authors == ["client", "bob", "client"])

        // Another server: import replays the contents in order, made by the importing certificate.
        let target = try TestServer()
        defer { target.stop() }
        let file = try TemporaryDirectory()
        let path = file.path + "/export.jsonl"
        try Data(exported.out.utf8).write(to: URL(fileURLWithPath: path))
        let imported = try run(target, "client", "import", path)
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.out.hasPrefix("created 1\t"), "\(imported.out)")
        let log = try run(target, "client", "log", id).out.split(separator: "\n")
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(log.map { String($0[4]) } == ["세 번째 판", "두 번째 판", "첫 판"])
        #expect(log.map { String($0[3]) } == ["update", "update", "create"])
        #expect(log.allSatisfy { $0[2] == "client" })

        // Importing the same file again changes nothing.
        let again = try run(target, "client", "import", path)
        #expect(again.status == 0, "\(again.err)")
        #expect(again.out.hasPrefix("created 0\tunchanged 1\t"), "\(again.out)")
        #expect(try run(target, "client", "log", id).out.split(separator: "\n").count == 3)
    }
}
