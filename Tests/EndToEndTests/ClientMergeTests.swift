import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import ServerTestSupport
import Testing

/// `memo-client edit --if-revision N` stays a strict compare-and-swap; `--merge` lets the server merge.
@Suite("memo-client edit --if-revision N --merge: merged like git, or still the conflict", .serialized)
struct ClientMergeTests {
    @Test func aStaleEditOfOtherLinesMergesOnlyWithMergeAndOverlappingOnesStillExit4() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        func run(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: certs, name: "client")
        }
        let id = try run("add", "-o", "ids", "하나\n둘\n셋\n넷").out.trimmingCharacters(in: .newlines)
        #expect(try run("edit", id, "하나\n둘\n셋\n넷째").status == 0)  // revision 2, from someone else

        // Strict without --merge: exit 4, nothing changed.
        let strict = try run("edit", id, "--if-revision", "1", "첫째\n둘\n셋\n넷")
        #expect(strict.status == 4, "\(strict.err)")
        #expect(try run("show", id).out.trimmingCharacters(in: .newlines) == "하나\n둘\n셋\n넷째")
        // --merge needs the revision the edit started from.
        let bare = try run("edit", id, "--merge", "x")
        #expect(bare.status == 2)
        #expect(bare.err.contains("--merge needs --if-revision"))

        // With --merge: both edits kept, printed as an update at revision 3.
        let merged = try run("edit", id, "--if-revision", "1", "--merge", "--json", "첫째\n둘\n셋\n넷")
        #expect(merged.status == 0, "\(merged.err)")
        #expect(merged.out.contains("\"revision\":3"))
        #expect(try run("show", id).out.trimmingCharacters(in: .newlines) == "첫째\n둘\n셋\n넷째")
        // Overlapping (the same last line): still the conflict.
        let overlap = try run("edit", id, "--if-revision", "1", "--merge", "하나\n둘\n셋\n마지막")
        #expect(overlap.status == 4, "\(overlap.err)")
        #expect(try run("show", id).out.trimmingCharacters(in: .newlines) == "첫째\n둘\n셋\n넷째")
    }
}
