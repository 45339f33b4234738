import MemoNet
import MemoProbe
@testable import MemoServer
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// A closed connection's keys go when it closes, not when a timer that still holds the connection object fires
/// (the handshake deadline's, 10 s by default: before, the secrets stayed in memory until then).
@Suite struct KeyCleansingTests {
    #if DEBUG
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func aClosedConnectionLetsGoOfItsKeysWhenItCloses(records: TLSRecordLayerChoice) throws {
        let server = try TestServer(records: records)
        defer { server.stop() }
        let client = try server.connect()
        #expect(try client.request(.ping(nonce: 1)) == .pong(nonce: 1))
        #expect(server.server.sessionsHoldingKeys == 1)
        client.socket.close()
        #expect(pollUntil { server.server.connectionCount == 0 }, "the server saw the connection close")
        // The handshake deadline's timer still holds the closed connection object; its session's keys are gone.
        #expect(server.server.connectionObjects == 1)
        #expect(server.server.sessionsHoldingKeys == 0)
    }
    #endif
}
