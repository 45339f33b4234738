import MemoPKI
@testable import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

/// The engine's own TLS 1.3 record layer (after the hand-off) against OpenSSL's, in every pairing.
@Suite("TLS 1.3 records after the hand-off")
struct TLSRecordLayerTests {
    static let suites = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
    static let pairings: [(client: TLSRecordLayerChoice, server: TLSRecordLayerChoice)] = [
        (.handOff, .handOff), (.handOff, .openSSL), (.openSSL, .handOff),
    ]

    /// A client and a server engine from `fixture`, handshaken.
    static func pair(
        _ fixture: TLSFixture, client: TLSRecordLayerChoice, server: TLSRecordLayerChoice, suite: String? = nil,
        serverMaximum: TLSVersion? = nil
    ) throws -> (client: TLSEngine, server: TLSEngine) {
        let certs = fixture.certs
        let serverContext = try TLSContext(
            TLSConfiguration(
                role: .server, certificateChainPath: certs.serverCertificatePath, privateKeyPath: certs.serverKeyPath,
                trustedCAPath: certs.caCertificatePath, maximumVersion: serverMaximum, recordLayer: server,
                cipherSuites: suite))
        let clientContext = try TLSContext(
            TLSConfiguration(
                role: .client, certificateChainPath: certs.clientCertificatePath, privateKeyPath: certs.clientKeyPath,
                trustedCAPath: certs.caCertificatePath, recordLayer: client))
        let clientEngine = try TLSEngine(context: clientContext, serverName: "localhost")
        let serverEngine = try TLSEngine(context: serverContext)
        let outcome = pumpHandshake(client: clientEngine, server: serverEngine)
        try #require(outcome.clientDone && outcome.serverDone)
        return (clientEngine, serverEngine)
    }

    @Test(arguments: pairings.indices, suites)
    func dataFlowsBothWaysInEveryPairingAndSuite(pairing: Int, suite: String) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let layers = Self.pairings[pairing]
            let (client, server) = try Self.pair(fixture, client: layers.client, server: layers.server, suite: suite)
            #expect(client.recordsHandedOff == (layers.client == .handOff))
            #expect(server.recordsHandedOff == (layers.server == .handOff))
            #expect(client.negotiatedCipher == suite)
            #expect(server.peerCommonName == "client")  // kept after the SSL is freed

            let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
            try client.writePlaintext(big)
            var atServer: [UInt8] = []
            _ = try transfer(from: client, to: server, chunk: 1_111, into: &atServer)
            #expect(atServer == big)
            try server.writePlaintext(big)
            var atClient: [UInt8] = []
            _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &atClient)
            #expect(atClient == big)

            try server.writePlaintext(Array("last".utf8))
            server.shutdown()
            var tail: [UInt8] = []
            #expect(try transfer(from: server, to: client, chunk: 1 << 20, into: &tail) == .bytes(4))
            #expect(tail == Array("last".utf8))
            #expect(try client.readPlaintext(into: &tail) == .closed)
            #expect(client.peerClosed)
        }
    }

    /// KeyUpdate with update_requested, from either side: the receiver must follow the sender's new key (or the
    /// next record fails to open) and answer with its own update at once.
    @Test(arguments: [false, true])
    func keyUpdatesAreFollowedAndAnswered(handOffRequests: Bool) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(
                fixture, client: handOffRequests ? .handOff : .openSSL, server: handOffRequests ? .openSSL : .handOff)
            for round in 0..<3 {
                try client.requestKeyUpdate()
                try client.writePlaintext(Array("after update \(round)".utf8))
                var atServer: [UInt8] = []
                _ = try transfer(from: client, to: server, chunk: 1 << 20, into: &atServer)
                #expect(atServer == Array("after update \(round)".utf8))
                // Neither layer answers at once: the update goes out with the next record (RFC 8446 §4.6.3).
                #expect(!server.hasOutbound)
                try server.writePlaintext(Array("reply \(round)".utf8))
                var atClient: [UInt8] = []
                _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &atClient)
                #expect(atClient == Array("reply \(round)".utf8))
            }
        }
    }

    /// After `recordsPerKey` records the layer updates its own sending key (RFC 8446 §5.5); both kinds of peer
    /// must follow. The limit is 2^24 in service, 3 here.
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func theSenderUpdatesItsKeyAfterItsRecordLimit(receiver: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(fixture, client: receiver, server: .handOff)
            let layer = try #require(server.recordLayer)
            layer.recordsPerKey = 3
            var received: [UInt8] = []
            var sent: [UInt8] = []
            var updates = 0
            for index in 0..<20 {
                let message = Array("record \(index)".utf8)
                sent += message
                try server.writePlaintext(message)
                // One record is header, content, type and tag; a KeyUpdate before it adds a 27-byte record.
                let extra = server.outboundCount - (5 + message.count + 1 + 16)
                #expect(extra == 0 || extra == 27)
                if extra == 27 { updates += 1 }
                _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &received)
            }
            #expect(received == sent)
            #expect(updates == 6)  // before records 3, 6, 9, 12, 15 and 18: three records per key
            try client.writePlaintext(Array("still in step".utf8))
            var back: [UInt8] = []
            _ = try transfer(from: client, to: server, chunk: 1 << 20, into: &back)
            #expect(back == Array("still in step".utf8))
        }
    }

    /// `sealDirect` (a fan-out delivery sealed straight into the loop's buffer) makes the same records as the queue,
    /// never overtakes queued ciphertext, and steps aside for the record limit's KeyUpdate, a record too long for
    /// one record and a buffer too small; both kinds of peer read everything in order.
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func recordsSealedStraightIntoABufferKeepTheirOrder(receiver: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(fixture, client: receiver, server: .handOff)
            let layer = try #require(server.recordLayer)
            layer.recordsPerKey = 4
            var scratch = [UInt8](repeating: 0, count: 32 * 1024)
            var sent: [UInt8] = []
            var received: [UInt8] = []
            var direct = 0
            for index in 0..<24 {
                let message = Array("message \(index)".utf8)
                sent += message
                let sealed = try scratch.withUnsafeMutableBytes { try server.sealDirect(message, into: $0) }
                if let sealed {
                    direct += 1
                    #expect(sealed == 5 + message.count + 1 + 16)
                    #expect(!server.hasOutbound)
                    scratch.withUnsafeBytes { client.feed(UnsafeRawBufferPointer(rebasing: $0[..<sealed])) }
                    _ = try client.readPlaintext(into: &received)
                } else {
                    try server.writePlaintext(message)
                    _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &received)
                }
                if index % 5 == 0 {
                    // Ciphertext queued and not yet sent: the next record must wait behind it.
                    let queued = Array("queued \(index)".utf8)
                    sent += queued
                    try server.writePlaintext(queued)
                    #expect(try scratch.withUnsafeMutableBytes { try server.sealDirect([1], into: $0) } == nil)
                    _ = try transfer(from: server, to: client, chunk: 1 << 20, into: &received)
                }
            }
            #expect(received == sent)
            // Four records per key: every fifth record went through the queue behind its KeyUpdate.
            #expect(direct > 0 && direct < 24)
            let tooLong = [UInt8](repeating: 7, count: TLSRecordLayer.maxPlaintext + 1)
            #expect(try scratch.withUnsafeMutableBytes { try server.sealDirect(tooLong, into: $0) } == nil)
            var small = [UInt8](repeating: 0, count: 10)
            #expect(try small.withUnsafeMutableBytes { try server.sealDirect([1, 2, 3], into: $0) } == nil)
            #expect(try scratch.withUnsafeMutableBytes { try server.sealDirect([], into: $0) } == nil)
        }
    }

    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func aTamperedRecordIsRefusedWithBadRecordMAC(sender: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(fixture, client: sender, server: .handOff)
            try client.writePlaintext(Array("an honest message".utf8))
            var wire: [UInt8] = []
            client.takeOutbound(into: &wire)
            wire[8] ^= 0x40
            server.feed(wire)
            var plaintext: [UInt8] = []
            #expect {
                _ = try server.readPlaintext(into: &plaintext)
            } throws: { error in
                (error as? TLSError)?.description.contains("bad_record_mac") == true
            }
            #expect(plaintext.isEmpty)
            // The alert reaches the sender, which fails too; later calls repeat the first error.
            #expect(server.hasOutbound)
            var alert: [UInt8] = []
            server.takeOutbound(into: &alert)
            client.feed(alert)
            #expect(throws: TLSError.self) { _ = try client.readPlaintext(into: &plaintext) }
            #expect(throws: TLSError.self) { try server.writePlaintext(Array("more".utf8)) }
        }
    }

    @Test func anOversizedOrForeignRecordIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let cases: [(bytes: [UInt8], alert: String)] = [
                ([23, 3, 3, 0x48, 0x01] + [UInt8](repeating: 0, count: 64), "record_overflow"),
                ([22, 3, 3, 0x00, 0x04, 1, 0, 0, 0], "unexpected_message"),  // a plaintext handshake record
                ([23, 3, 3, 0x00, 0x05, 1, 2, 3, 4, 5], "bad_record_mac"),  // shorter than a tag
            ]
            for (bytes, alert) in cases {
                let (_, server) = try Self.pair(fixture, client: .handOff, server: .handOff)
                server.feed(bytes)
                var plaintext: [UInt8] = []
                #expect {
                    _ = try server.readPlaintext(into: &plaintext)
                } throws: { error in
                    (error as? TLSError)?.description.contains(alert) == true
                }
            }
        }
    }

    @Test func anIdleEngineKeepsOnlyItsKeysAndRebuildsOnTheNextRecord() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(fixture, client: .handOff, server: .handOff)
            try client.writePlaintext([UInt8](repeating: 1, count: 50_000))
            var received: [UInt8] = []
            _ = try transfer(from: client, to: server, chunk: 4_096, into: &received)
            #expect(server.holdsCipherContexts)
            #expect(server.retainedBufferBytes > 0)
            server.releaseBuffers(force: true)
            #expect(!server.holdsCipherContexts)
            #expect(server.retainedBufferBytes == 0)

            try server.writePlaintext(Array("still here".utf8))
            received.removeAll()
            _ = try transfer(from: server, to: client, chunk: 7, into: &received)
            #expect(received == Array("still here".utf8))
            #expect(server.holdsCipherContexts)
        }
    }

    @Test func aTLS12SessionStaysWithOpenSSL() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let (client, server) = try Self.pair(fixture, client: .handOff, server: .handOff, serverMaximum: .tls1_2)
            #expect(server.negotiatedProtocol == "TLSv1.2")
            #expect(!server.recordsHandedOff)
            #expect(!client.recordsHandedOff)
            try client.writePlaintext(Array("over 1.2".utf8))
            var received: [UInt8] = []
            _ = try transfer(from: client, to: server, chunk: 3, into: &received)
            #expect(received == Array("over 1.2".utf8))
        }
    }
}
