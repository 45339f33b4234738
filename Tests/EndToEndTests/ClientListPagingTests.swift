import ClientTestSupport
import Foundation
import MemoClientCLI
import MemoModel
import MemoNet
import MemoServer
import MemoTestSupport
import PostgresTestSupport
import ServerTestSupport
import StoreTestSupport
import Testing

/// A `memo-server` process over SQLite or PostgreSQL, with its certificates.
private struct PagingServer {
    let certificates: TestCertificates
    let process: ServerProcess
    private let data: TemporaryDirectory

    init(_ kind: StoreKind) throws {
        certificates = try TestCertificates()
        data = try TemporaryDirectory()
        let store = kind == .postgres
            ? try TestPostgres.shared().makeDatabase() : "sqlite:\(data.path)/memos.sqlite"
        process = try ServerProcess(
            arguments: ["--store", store, "--certs", certificates.path, "--listen", "127.0.0.1:0"], directory: data)
    }

    /// Runs memo-client off Swift's cooperative pool (which has one thread per core), so that the other suites'
    /// async tests keep their threads while this one waits for its processes.
    func client(_ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
        let (address, certs) = (process.address, certificates.path)
        return try await offThePool { try runClient(arguments, server: address, certs: certs) }
    }

    /// Imports `count` memos whose insert dates repeat in threes (so that ids order the equal ones), through the
    /// client's import.
    func fill(_ count: Int) async throws {
        var lines = ""
        for index in 0..<count {
            let micros = 1_700_000_000_000_000 + Int64(index / 3) * 1_000_000
            let date = Timestamp.iso8601(micros: micros)
            lines += "{\"id\":\"\(UUID().uuidString.lowercased())\",\"content\":\"memo \(index)\",\"insertDate\":"
                + "\"\(date)\",\"updateDate\":\"\(date)\"}\n"
        }
        let file = data.path + "/memos-\(count).jsonl"
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        let imported = try await client(["import", file])
        #expect(imported.status == 0, "\(imported.err)")
    }

    func stop() { process.stop() }
}

/// The id of one `--json` memo line.
private func memoID(_ line: some StringProtocol) throws -> String {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    return try #require(object?["id"] as? String, "\(line)")
}

/// The memo ids of `list --json` output and its `next` cursor (nil for `{"next":null}`); fails the test when the
/// last line is not a `next` object.
private func page(_ out: String) throws -> (ids: [String], next: String?) {
    var lines = out.split(separator: "\n").map(String.init)
    let popped = lines.popLast()
    let last = try #require(popped)
    let end = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    #expect(end.keys.sorted() == ["next"], "\(last)")
    return (try lines.map(memoID), end["next"] as? String)
}

@Suite("memo-client list --limit and --after: pages served by the server", .serialized)
struct ClientListPagingTests {
    @Test(arguments: [StoreKind.sqlite] + (postgresTestsEnabled ? [StoreKind.postgres] : []))
    func pagingThrough1000MemosBy100GivesEachOnceInListOrder(kind: StoreKind) async throws {
        let server = try PagingServer(kind)
        defer { server.stop() }
        try await server.fill(1_000)
        let whole = try await server.client(["list", "--json"])
        #expect(whole.status == 0)
        let expected = try whole.out.split(separator: "\n").map(memoID)
        #expect(expected.count == 1_000)
        var paged: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let after = cursor.map { ["--after", $0] } ?? []
            let result = try await server.client(["list", "--limit", "100", "--json"] + after)
            #expect(result.status == 0, "\(result.err)")
            #expect(result.err.isEmpty, "\(result.err)")
            let (ids, next) = try page(result.out)
            #expect(ids.count == 100)
            paged += ids
            cursor = next
            pages += 1
        } while cursor != nil && pages < 20
        #expect(pages == 10)
        #expect(paged == expected)
        #expect(Set(paged).count == 1_000)
    }

    @Test(arguments: [StoreKind.sqlite] + (postgresTestsEnabled ? [StoreKind.postgres] : []))
    func aCursorWhoseMemoWasDeletedMeanwhileStillPagesOnFromItsPlace(kind: StoreKind) async throws {
        let server = try PagingServer(kind)
        defer { server.stop() }
        try await server.fill(30)
        let first = try await server.client(["list", "--limit", "10"])
        #expect(first.status == 0)
        let rows = first.out.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        #expect(rows.count == 10)
        // Plain output: the memos on stdout, the cursor on stderr.
        let next = try #require(first.err.split(separator: "\n").first(where: { $0.hasPrefix("next\t") }))
        let cursor = String(next.dropFirst("next\t".count))
        #expect(try await server.client(["rm", rows[9]]).status == 0)
        #expect(try await server.client(["rm", rows[8]]).status == 0)
        #expect(try await server.client(["add", "newer than all"]).status == 0)
        let all = try await server.client(["list"]).out.split(separator: "\n")
            .map { String($0.split(separator: "\t")[0]) }
        #expect(all.count == 29)
        let second = try await server.client(["list", "--limit", "10", "--after", cursor, "-o", "ids"])
        #expect(second.status == 0, "\(second.err)")
        // The first ten were the newest ten; with the new one on top and two of them gone, the page after the cursor
        // starts at the eleventh of the original list: position 9 of the new one.
        #expect(second.out.split(separator: "\n").map(String.init) == Array(all[9..<19]))
        // The last page says nothing more on stderr, and JSON says null.
        let rest = try await server.client(["list", "--after", cursor, "--json"])
        let (ids, end) = try page(rest.out)
        #expect(ids == Array(all[9...]))
        #expect(end == nil)
        let tail = try await server.client(["list", "--limit", "20", "--after", cursor])
        #expect(tail.status == 0)
        #expect(!tail.err.contains("next"), "\(tail.err)")
    }

    @Test func aFilterReadsPagesUntilTheLimitIsMet() async throws {
        let server = try PagingServer(.sqlite)
        defer { server.stop() }
        try await server.fill(1_200)
        // "memo 1…" matches 1, 10-19, 100-199 and 1000-1199: 311 memos, spread over the list.
        let expected = try await server.client(["list", "--filter", "memo 1", "-o", "ids"]).out
            .split(separator: "\n")
        #expect(expected.count == 311)
        let first = try await server.client(["list", "--filter", "memo 1", "--limit", "250", "-o", "ids"])
        let cursor = String(try #require(first.err.split(separator: "\n").first).dropFirst("next\t".count))
        let second = try await server.client(
            ["list", "--filter", "memo 1", "--limit", "250", "--after", cursor, "-o", "ids"])
        #expect(first.out.split(separator: "\n") + second.out.split(separator: "\n") == expected)
        #expect(second.err.isEmpty, "\(second.err)")
    }

    @Test func aServerOfProtocolVersion1GetsAClearErrorAndNothingIsSent() throws {
        var limits = ServerLimits()
        limits.protocolVersion = 1
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let address = server.address.description
        let result = try runClient(["list", "--limit", "5"], server: address, certs: server.certificates.path)
        #expect(result.status == 1)
        #expect(result.err == "memo-client: the server at \(address) speaks protocol version 1, which has no paged "
            + "list: --limit and --after need a memo-server of protocol version 2 or later (list without them reads "
            + "every memo)\n")
        // The whole list still works with it.
        #expect(try runClient(["list"], server: address, certs: server.certificates.path).status == 0)
    }

    @Test func aMalformedCursorOrLimitIsAUsageError() throws {
        let result = try runTool("memo-client", ["list", "--after", "0f1e2d3c"])
        #expect(result.0 == 2)
        #expect(result.2.hasPrefix(
            "memo-client: --after takes the cursor a paged list printed (48 hex digits), not '0f1e2d3c'\n"))
        let zero = try runTool("memo-client", ["list", "--limit", "0"])
        #expect(zero.0 == 2)
        #expect(zero.2.hasPrefix("memo-client: --limit takes a whole number from 1 to 4294967295, not '0'\n"))
        let other = try runTool("memo-client", ["show", "abc", "--after", String(repeating: "0", count: 48)])
        #expect(other.2.hasPrefix("memo-client: --after is only for list\n"))
    }
}
