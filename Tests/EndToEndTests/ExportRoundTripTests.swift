import ClientTestSupport
import Foundation
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import ServerTestSupport
import Testing

@Suite("export -> import into an empty server -> export keeps every date", .serialized)
struct ExportRoundTripTests {
    @Test func importRestoresInsertAndUpdateDatesOnlyRevisionsAreTheNewServers() throws {
        let source = try TestServer()
        defer { source.stop() }
        let target = try TestServer()
        defer { target.stop() }
        func client(_ server: TestServer, _ arguments: String..., stdin: String? = nil) throws
            -> (status: Int32, out: String, err: String)
        {
            try runClient(arguments, server: server.address.description, certs: server.certificates.path,
                          stdin: stdin)
        }
        let first = try client(source, "add", "첫 메모")
        _ = try client(source, "add", "second")
        let firstID = String(try #require(first.out.split(separator: "\t").first))
        // Edited later, so its update date is not its insert date (and its revision not its creation's).
        #expect(try client(source, "edit", firstID, "첫 메모, 고침").status == 0)
        let exported = try client(source, "export")
        #expect(exported.status == 0)

        let imported = try client(target, "import", "-", stdin: exported.out)
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.out == "created 2\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
        let again = try client(target, "export")
        let before = try exported.out.split(separator: "\n").map { try MemoJSON.record(fromLine: String($0)) }
        let after = try again.out.split(separator: "\n").map { try MemoJSON.record(fromLine: String($0)) }
        #expect(before.count == 2)
        #expect(before.map(\.id) == after.map(\.id))
        #expect(before.map(\.insertMicros) == after.map(\.insertMicros))
        #expect(before.map(\.updateMicros) == after.map(\.updateMicros))
        #expect(before.contains { $0.updateMicros != $0.insertMicros })
        #expect(zip(before, after).allSatisfy { $0.content.hasSameBytes(as: $1.content) })
        // What cannot be restored: revisions are the new server's, counted from 1 without gaps.
        #expect(Set(after.compactMap(\.revision)) == [1, 2])
    }
}
