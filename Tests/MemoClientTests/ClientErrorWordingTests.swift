import Foundation
import MemoClient
import MemoCore
import MemoServer
import MemoTestSupport
import Testing

@Suite("Server errors as the client library words them")
struct ClientErrorWordingTests {
    @Test func aRefusedWriteSaysPermissionDeniedOnceNotTwice() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration("reader"))
        defer { client.close() }
        let error = try await #require(throws: MemoError.self) { try await client.create(content: "no") }
        #expect(error == .permissionDenied("this client's certificate is read-only"))
        #expect(Array(error.description.utf8) == Array("permission denied: this client's certificate is read-only".utf8))
    }
}
