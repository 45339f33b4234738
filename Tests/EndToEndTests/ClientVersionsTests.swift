import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoPKI
import MemoTLS
import ServerTestSupport
import Testing

@Suite("memo-client log, restore and trash, and the author in list and show", .serialized)
struct ClientVersionsTests {
    private struct Version: Decodable, Equatable {
        struct Who: Decodable, Equatable {
            var name: String
            var serial: String
        }
        var revision: UInt64
        var kind: String
        var date: String
        var author: Who
        var content: String
    }

    @Test func aMemoEditedByTwoCertificatesShowsBothInLogAndIsRestoredAndBroughtBackFromTheTrash() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        _ = try CertificateAuthority.issueClient(name: "bob", directory: certs, validity: .days(1))
        let clientSerial = try CertificateInfo(path: certs + "/client.crt").serial
        let bobSerial = try CertificateInfo(path: certs + "/bob.crt").serial
        func run(_ name: String = "client", _ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: certs, name: name)
        }
        let id = try run("client", "add", "-o", "ids", "첫 판\nline two").out.trimmingCharacters(in: .newlines)
        #expect(try run("bob", "edit", id, "두 번째").status == 0)

        // log: newest first, both names, one request.
        let log = try run("client", "log", id)
        #expect(log.status == 0, "\(log.err)")
        let lines = log.out.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(lines.map { $0[0] } == ["2", "1"])
        #expect(lines.map { $0[2] } == ["bob", "client"])
        #expect(lines.map { $0[3] } == ["update", "create"])
        #expect(lines.map { $0[4] } == ["두 번째", "첫 판"])
        let json = try run("client", "log", id, "--json")
        let versions = try JSONDecoder().decode([Version].self, from: Data(json.out.utf8))
        #expect(versions.map(\.author) == [.init(name: "bob", serial: bobSerial), .init(name: "client", serial: clientSerial)])
        #expect(versions.map(\.content) == ["두 번째", "첫 판\nline two"])
        #expect(try run("client", "log", id, "--limit", "1", "--json").out.contains("\"revision\":2,"))

        // list and show carry the author of the last change.
        let listed = try run("client", "list", "--json").out
        #expect(listed.contains("\"author\":{\"name\":\"bob\",\"serial\":\"\(bobSerial)\"}"))
        #expect(try run("client", "show", id, "-o", "wide").out.split(separator: "\t")[5] == "bob")

        // restore of a live memo: --revision needed (usage), then the old content by this certificate.
        let bare = try run("client", "restore", id)
        #expect(bare.status == 2, "\(bare.err)")
        #expect(try run("client", "restore", id, "--revision", "999").status == 3)
        let restored = try run("client", "restore", id, "--revision", "1", "--expect", "2", "--json")
        #expect(restored.status == 0, "\(restored.err)")
        #expect(restored.out.contains("\"revision\":3,\"author\":{\"name\":\"client\""))
        #expect(try server.store.memo(UUID(uuidString: id)!).content == "첫 판\nline two")
        #expect(try run("client", "log", id).out.split(separator: "\n").first?.split(separator: "\t")[3] == "restore")

        // rm, then the trash, then back under its id.
        #expect(try run("bob", "rm", id).status == 0)
        let trash = try run("client", "trash")
        #expect(trash.out.hasPrefix(id + "\t4\t") && trash.out.contains("\tbob\t첫 판\n"), "\(trash.out)")
        #expect(try run("client", "trash", "--json").out.contains("\"deletedBy\":{\"name\":\"bob\""))
        let back = try run("client", "restore", id, "--json")
        #expect(back.status == 0, "\(back.err)")
        #expect(back.out.contains("\"revision\":5,"))
        #expect(try run("client", "trash", "--json").out == "[]\n")
        #expect(try run("client", "log", UUID().uuidString).status == 3)
        // A read-only certificate reads the history, and may not restore.
        #expect(try run("reader", "log", id).status == 0)
        #expect(try run("reader", "restore", id, "--revision", "1").status == 5)
    }
}
