import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoTestSupport
import ServerTestSupport
import Testing

@Suite("memo-client log and trash page with --before and --all", .serialized)
struct ClientVersionsPagingTests {
    /// Versions of 60 000 bytes: twenty of them do not fit in one 1 MiB frame, so the server cuts its answer.
    private static func content(_ index: Int) -> String {
        "v\(index)\n" + String(repeating: "x", count: 60_000)
    }

    @Test func logFollowsTheServersCursorPastAFullFrameAndPagesWithBefore() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        func run(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: certs)
        }
        func revisions(_ out: String) -> [String] {
            out.split(separator: "\n").map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) }
        }
        let memo = try await server.store.create(content: Self.content(1), id: nil, insertDate: nil)
        for index in 2...20 {
            _ = try await server.store.update(id: memo.id, content: Self.content(index), expectedRevision: nil)
        }
        let id = memo.id.uuidString.lowercased()
        let everyRevision = (1...20).reversed().map(String.init)

        // The default limit (50) gets all twenty, though the first answer held fewer (the frame cut it).
        let log = try run("log", id)
        #expect(log.status == 0, "\(log.err)")
        #expect(revisions(log.out) == everyRevision)
        let all = try run("log", id, "--all", "--json")
        #expect(all.status == 0, "\(all.err)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(all.out.utf8)) as? [[String: Any]])
        #expect(objects.compactMap { $0["revision"] as? Int } == Array((1...20).reversed()))
        #expect(objects.last?["content"] as? String == Self.content(1))

        // A page before the last revision printed, then the end (an empty page).
        let first = try run("log", id, "--limit", "3")
        #expect(revisions(first.out) == ["20", "19", "18"])
        let second = try run("log", id, "--limit", "3", "--before", "18")
        #expect(revisions(second.out) == ["17", "16", "15"])
        let patched = try run("log", id, "--limit", "1", "--before", "18", "--patch")
        #expect(patched.out.contains("--- r16\n+++ r17\n@@ -1,2 +1,2 @@\n-v16\n+v17\n"), "\(patched.out.prefix(300))")
        #expect(try run("log", id, "--before", "1").out == "")
        #expect(try run("log", id, "--before", "1", "--json").out == "[]\n")

        // export --versions carries every kept version too, not the first answer's.
        let export = try run("export", "--versions")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(export.out.utf8)) as? [String: Any])
        #expect((line["versions"] as? [[String: Any]])?.count == 20)

        // Bad paging options are usage errors, with a line saying why.
        for arguments in [["--all", "--limit", "3"], ["--before", "0"], ["--before", "r5"]] {
            let bad = try runClient(["log", id] + arguments, server: server.address.description, certs: certs)
            #expect(bad.status == 2 && bad.err.hasPrefix("memo-client: --"), "\(arguments): \(bad.err)")
        }
    }

    @Test func trashPagesWithBeforeTheLastDeletesRevisionAndAllReadsEveryDelete() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        func run(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
            try runClient(arguments, server: server.address.description, certs: certs)
        }
        var deletes: [UInt64] = []
        for index in 1...3 {
            let memo = try await server.store.create(content: "memo \(index)", id: nil, insertDate: nil)
            _ = try await server.store.delete(id: memo.id, expectedRevision: nil)
            deletes.append(memo.revision + 1)
        }
        func fields(_ out: String) -> [[Substring]] {
            out.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        }
        let first = try run("trash", "--limit", "2")
        #expect(first.status == 0, "\(first.err)")
        #expect(fields(first.out).map { $0[4] } == ["memo 3", "memo 2"])
        let cursor = try #require(fields(first.out).last.map { String($0[1]) })
        #expect(cursor == String(deletes[1]))
        let second = try run("trash", "--limit", "2", "--before", cursor)
        #expect(fields(second.out).map { $0[4] } == ["memo 1"])
        #expect(try run("trash", "--before", String(deletes[0])).out == "")
        let all = try run("trash", "--all", "--json")
        #expect(all.status == 0, "\(all.err)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(all.out.utf8)) as? [[String: Any]])
        #expect(objects.compactMap { $0["revision"] as? Int } == deletes.reversed().map(Int.init))
    }
}
