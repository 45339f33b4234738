import ClientTestSupport
import Foundation
import MemoClientCLI
import MemoModel
import MemoNet
import ServerTestSupport
import Testing

@Suite("memo-client -o json|tsv|ids|wide on the commands that print memos", .serialized)
struct ClientOutputFormatTests {
    @Test func eachFormPrintsItsColumnsForListShowAddEditAndRm() throws {
        let server = try TestServer()
        defer { server.stop() }
        func client(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: server.certificates.path)
        }
        let added = try client("add", "-o", "ids", "첫 줄\tand a tab\nsecond line")
        #expect(added.status == 0)
        let id = added.out.trimmingCharacters(in: .newlines)
        #expect(UUID(uuidString: id) != nil && id == id.lowercased(), "\(added.out)")
        _ = try client("add", "other")

        let memo = try #require(server.store.snapshot().memos.first { $0.id.uuidString.lowercased() == id })
        let wide = id + "\t1\t" + Timestamp.iso8601(micros: memo.insertMicros) + "\t"
            + Timestamp.iso8601(micros: memo.updateMicros) + "\t" + String(memo.content.utf8.count)
            + "\tclient\t첫 줄 and a tab"
        #expect(memo.content.utf8.count == 29)
        let listed = try client("list", "--output", "wide")
        #expect(listed.out.split(separator: "\n").last.map(String.init) == wide)
        #expect(listed.out.split(separator: "\n").first?.split(separator: "\t").count == 7)
        #expect(try client("list", "-o", "ids").out.split(separator: "\n").last.map(String.init) == id)
        #expect(try client("list", "-o", "tsv").out == (try client("list").out))

        // show: the memo as one line of the form chosen; without -o, the content as before.
        #expect(try client("show", id, "-o", "wide").out == wide + "\n")
        #expect(try client("show", id, "-o", "ids").out == id + "\n")
        #expect(try client("show", id, "-o", "tsv").out
            == id + "\t1\t" + Timestamp.iso8601(micros: memo.insertMicros) + "\t첫 줄 and a tab\n")
        #expect(try client("show", id).out == memo.content + "\n")
        #expect(try client("show", id, "-o", "json").out == (try client("show", id, "--json").out))

        let edited = try client("edit", id, "-o", "wide", "new")
        #expect(edited.out.hasPrefix(id + "\t3\t") && edited.out.hasSuffix("\t3\tclient\tnew\n"), "\(edited.out)")
        #expect(try client("rm", id, "-o", "ids").out == id + "\n")

        let refused = try client("watch", "-o", "wide")
        #expect(refused.status == 2)
        #expect(refused.err.hasPrefix("memo-client: -o wide is only for list, show, add, edit and rm\n"))
    }

    @Test func aFormChosenWithOIsNotForPeopleEvenOnATerminal() {
        let tsv = OutputStyle(json: false, human: true, color: true, format: .tsv)
        #expect(!tsv.human && !tsv.color && tsv.columns == nil)
        let json = OutputStyle(json: false, human: true, color: true, format: .json)
        #expect(json.json)
        let memo = Memo(id: UUID(), content: "a\nb", insertMicros: 0, updateMicros: 1, revision: 9)
        #expect(MemoFormatter(style: OutputStyle(json: false, human: true, color: true, format: .ids)).line(memo)
            == memo.id.uuidString.lowercased())
        #expect(MemoFormatter(style: OutputStyle(json: false, human: true, color: true, format: .wide)).line(memo)
            == memo.id.uuidString.lowercased() + "\t9\t1970-01-01T00:00:00.000000Z\t1970-01-01T00:00:00.000001Z\t3\t-\ta")
    }
}
