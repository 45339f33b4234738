import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoServer
import ServerTestSupport
import Testing

@Suite("MemoConnection.listPage against a server of protocol version 1")
struct ClientListPageTests {
    @Test func theClientRefusesAPageBeforeSendingItToAVersion1ServerAndKeepsItsConnection() async throws {
        var limits = ServerLimits()
        limits.protocolVersion = 1
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        await #expect {
            _ = try await client.listPage(limit: 10, after: nil)
        } throws: { error in
            guard let old = error as? ServerTooOldError else { return false }
            return old.speaks == 1 && old.needs == 2
        }
        // Nothing was sent: the connection is the same and still serves.
        _ = try await client.create(content: "still here")
        #expect(try await client.list().memos.count == 1)
    }
}
