import Foundation
import MemoProbe
@testable import MemoServer
import MemoWire
import ServerTestSupport
import Testing

@Suite("Server: a closed connection is freed")
struct ServerLifetimeTests {
    /// A connection object that stayed reachable after its close would keep its session and TLS state for the
    /// life of the server: one that wrote once did, through a cached reference to itself (a retain cycle).
    @Test func connectionsAreFreedAfterTheyCloseWhetherTheyReadOrWrote() throws {
        var limits = ServerLimits()
        // A cancelled timer holds its connection until it is due: the handshake deadline is the longest here.
        limits.handshakeTimeout = 0.2
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        do {
            let reader = try server.connect()
            #expect(try reader.request(.list) == .memos(revision: 0, last: true, memos: []))
            let writer = try server.connect()
            guard case .memo = try writer.request(.create(id: nil, insertMicros: nil, content: "x")) else {
                Issue.record("the create failed")
                return
            }
            #expect(server.server.connectionObjects == 2)
        }  // both clients close here
        // The server learns of the closes and the timers come due on its loops; poll for the count to reach 0.
        let deadline = Date().addingTimeInterval(10)
        while server.server.connectionObjects > 0, Date() < deadline { usleep(10_000) }
        #expect(server.server.connectionObjects == 0)
    }
}
