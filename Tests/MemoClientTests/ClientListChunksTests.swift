import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoServer
import ServerTestSupport
import Testing

@Suite("MemoConnection joins a list's chunks")
struct ClientListChunksTests {
    /// A list and a page of many chunks (a small frame limit) arrive whole and in the server's order, by the
    /// memos' own bytes: the table keeps the chunks as they come and joins them once after the last.
    @Test func aListAndAPageOfManyChunksArriveWholeAndInOrder() async throws {
        var limits = ServerLimits()
        limits.maxFrameSize = 16 * 1024
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        for i in 0..<60 {
            // About 1.2 KB each: a dozen to a chunk, five chunks or more.
            _ = try await client.create(content: "\(i) " + String(repeating: "메모", count: 200))
        }
        let expected = server.store.snapshot().memos.map { Array($0.content.utf8) + Array($0.id.uuidString.utf8) }
        let listed = try await client.list()
        #expect(listed.memos.map { Array($0.content.utf8) + Array($0.id.uuidString.utf8) } == expected)
        let page = try await client.listPage(limit: 50, after: nil)
        #expect(page.memos.map { Array($0.content.utf8) + Array($0.id.uuidString.utf8) } == Array(expected.prefix(50)))
        #expect(page.more)
    }
}
