import MemoWire
import Testing

@testable import MemoClientCLI

@Suite("memo-client: log and trash page by the wire's versions page")
struct VersionPagesTests {
    /// Entries 1 to `count`, newest first, served as the server serves them: at most the wire's page, older than the
    /// cursor, with the flag saying more follow.
    private static func page(of count: Int, _ limit: UInt32, _ before: UInt64?) -> (entries: [UInt64], more: Bool) {
        let older = (1...UInt64(count)).reversed().filter { revision in before.map { revision < $0 } ?? true }
        let page = Array(older.prefix(Int(min(limit, WireProtocol.maxVersionsPage))))
        return (page, older.count > page.count)
    }

    @Test func everyRequestAsksForAtMostTheWiresVersionsPage() async throws {
        let cap = WireProtocol.maxVersionsPage
        var asked: [UInt32] = []
        let all = try await CommandRunner.pages(limit: nil, before: nil, revision: { $0 }) { limit, before in
            asked.append(limit)
            return Self.page(of: 2500, limit, before)
        }
        #expect(all == Array((1...2500).reversed()))
        #expect(asked == [cap, cap, cap])

        asked = []
        let some = try await CommandRunner.pages(limit: 1500, before: 2001, revision: { $0 }) { limit, before in
            asked.append(limit)
            return Self.page(of: 2500, limit, before)
        }
        #expect(some == Array((501...2000).reversed()))
        #expect(asked == [cap, 1500 - cap])
    }
}
