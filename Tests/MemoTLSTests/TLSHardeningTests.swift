import MemoPKI
@testable import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

/// What a peer can make the record layer do after the handshake: bounded work for KeyUpdates, the right alert
/// for a bad one, a hand-off only when OpenSSL has sealed nothing under the application key, AEAD-only TLS 1.2.
@Suite("TLS hardening: KeyUpdate answers, hand-off guard, TLS 1.2 suites")
struct TLSHardeningTests {
    /// A client and server engine made from the given contexts, handshaken in memory.
    static func handshake(client: TLSContext, server: TLSContext) throws -> (client: TLSEngine, server: TLSEngine) {
        let clientEngine = try TLSEngine(context: client, serverName: "localhost")
        let serverEngine = try TLSEngine(context: server)
        let outcome = pumpHandshake(client: clientEngine, server: serverEngine)
        try #require(outcome.clientDone && outcome.serverDone, "\(String(describing: outcome.serverError))")
        return (clientEngine, serverEngine)
    }

    static func context(_ fixture: TLSFixture, _ role: TLSConfiguration.Role, _ layer: TLSRecordLayerChoice,
                        maximum: TLSVersion? = nil) throws -> TLSContext {
        let certs = fixture.certs
        let isServer = role == .server
        return try TLSContext(TLSConfiguration(
            role: role, certificateChainPath: isServer ? certs.serverCertificatePath : certs.clientCertificatePath,
            privateKeyPath: isServer ? certs.serverKeyPath : certs.clientKeyPath,
            trustedCAPath: certs.caCertificatePath, maximumVersion: maximum, recordLayer: layer))
    }

    /// 500 KeyUpdate(update_requested) in a row queue nothing; the next record goes out behind exactly one
    /// KeyUpdate, and both sides stay in step. (Before: one 27-byte answer per request, unbounded.)
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func keyUpdateRequestsAreAnsweredOnceBeforeTheNextRecord(requester: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try TLSRecordLayerTests.pair(fixture, client: requester, server: .handOff)
            var received: [UInt8] = []
            for _ in 0..<500 {
                try client.requestKeyUpdate()
                _ = try transfer(from: client, to: server, chunk: 1 << 20, into: &received)
            }
            #expect(received.isEmpty)
            #expect(server.outboundCount == 0)
            #expect(server.recordLayer?.updateOwed == true)

            try server.writePlaintext(Array("after".utf8))
            // One KeyUpdate record (4 + 1 bytes of message, type, tag) and the data record.
            #expect(server.outboundCount == (5 + 5 + 1 + 16) + (5 + 5 + 1 + 16))
            #expect(server.recordLayer?.updateOwed == false)
            _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &received)
            #expect(received == Array("after".utf8))
            try client.writePlaintext(Array("in step".utf8))
            received.removeAll()
            _ = try transfer(from: client, to: server, chunk: 1 << 20, into: &received)
            #expect(received == Array("in step".utf8))
        }
    }

    /// RFC 8446 §4.6.3: request_update other than 0 or 1 is illegal_parameter; a KeyUpdate of the wrong length
    /// stays decode_error.
    @Test(arguments: [([24, 0, 0, 1, 2] as [UInt8], "illegal_parameter"), ([24, 0, 0, 2, 1, 0], "decode_error")])
    func aMalformedKeyUpdateGetsItsAlert(message: [UInt8], alert: String) throws {
        let suite = try #require(TLS13Suite(protocolID: 0x1301))
        let peerSecret = [UInt8](repeating: 0x11, count: suite.hashLength)
        let ourSecret = [UInt8](repeating: 0x22, count: suite.hashLength)
        let layer = TLSRecordLayer(
            suite: suite, readSecret: peerSecret, writeSecret: ourSecret, isServer: true, outbound: ByteQueue())
        let peer = RecordProtection(suite: suite, secret: peerSecret, encrypting: true)
        var input = ByteQueue()
        let sealed = message.withUnsafeBytes { input.appendRecord(type: 22, content: $0, seal: peer.crypt) }
        try #require(sealed)
        var plaintext: [UInt8] = []
        #expect {
            _ = try layer.open(&input, into: &plaintext)
        } throws: { error in
            guard case .sent(let sent, let reason) = error as? RecordFailure else { return false }
            return TLSAlert.name(sent) == alert && reason.contains("KeyUpdate")
        }
        #expect(!layer.outbound.isEmpty)  // the alert for the peer
    }

    /// A server that sends session tickets seals them under its application key before the hand-off: its record
    /// layer must continue that key's sequence after them, or it would repeat nonces (and the client would fail
    /// to open the next record). The client, handed off, drops the tickets.
    @Test func aServerThatSentTicketsHandsOffAfterThemAndTheClientDropsTheTickets() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let serverContext = try Self.context(fixture, .server, .handOff)
            serverContext.sendSessionTickets(2)
            let (client, server) = try Self.handshake(
                client: try Self.context(fixture, .client, .handOff), server: serverContext)
            #expect(server.recordsHandedOff)
            #expect(client.recordsHandedOff)
            for round in 0..<3 {
                try server.writePlaintext(Array("from the server \(round)".utf8))
                var atClient: [UInt8] = []
                _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &atClient)
                #expect(atClient == Array("from the server \(round)".utf8))
                try client.writePlaintext(Array("from the client \(round)".utf8))
                var atServer: [UInt8] = []
                _ = try transfer(from: client, to: server, chunk: 1 << 20, into: &atServer)
                #expect(atServer == Array("from the client \(round)".utf8))
            }
        }
    }

    /// Without tickets nothing is sealed after the server's Finished, so both sides still hand off.
    @Test func withoutTicketsBothSidesHandOff() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let serverContext = try Self.context(fixture, .server, .handOff)
            serverContext.sendSessionTickets(0)
            let (client, server) = try Self.handshake(
                client: try Self.context(fixture, .client, .handOff), server: serverContext)
            #expect(server.recordsHandedOff)
            #expect(client.recordsHandedOff)
        }
    }

    /// TLS 1.2 agrees only ECDHE with an AEAD; a client offering only CBC suites is refused.
    @Test func tls12NegotiatesAnAEADSuiteAndRefusesCBC() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, _) = try Self.handshake(
                client: try Self.context(fixture, .client, .handOff, maximum: .tls1_2),
                server: try Self.context(fixture, .server, .handOff))
            #expect(client.negotiatedProtocol == "TLSv1.2")
            let cipher = try #require(client.negotiatedCipher)
            #expect(cipher.hasPrefix("ECDHE-") && (cipher.contains("GCM") || cipher.contains("CHACHA20")), "\(cipher)")

            let cbcClient = try Self.context(fixture, .client, .openSSL, maximum: .tls1_2)
            try #require(cbcClient.useTLS12Ciphers("ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA"))
            let engine = try TLSEngine(context: cbcClient, serverName: "localhost")
            let server = try TLSEngine(context: try Self.context(fixture, .server, .handOff))
            let outcome = pumpHandshake(client: engine, server: server)
            #expect(!outcome.serverDone)
            #expect(outcome.serverError?.description.contains("no shared cipher") == true,
                    "\(String(describing: outcome.serverError))")
        }
    }
}

/// `discard` lets go of a session's keys at once, on both record layers: the `SSL` is freed and the record layer's
/// protections (which wipe their secrets, keys and IVs when freed) go, and every later call fails.
@Suite struct TLSDiscardTests {
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func discardDropsTheKeysAndRefusesLaterUse(server layer: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try TLSRecordLayerTests.pair(fixture, client: .handOff, server: layer)
            #expect(client.holdsKeyMaterial && server.holdsKeyMaterial)
            client.discard()
            server.discard()
            #expect(!client.holdsKeyMaterial && !server.holdsKeyMaterial)
            #expect(throws: TLSError.self) { try server.writePlaintext(Array("late".utf8)) }
            var plaintext: [UInt8] = []
            #expect(throws: TLSError.self) { _ = try client.readPlaintext(into: &plaintext) }
            #expect(client.outboundCount == 0 && server.outboundCount == 0)
        }
    }
}
