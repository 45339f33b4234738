import COpenSSL
import Foundation
import MemoPKI
import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

/// TLS 1.3 session resumption: the server's ticket, the client's saved session offered again, and the checks that
/// keep a resumed session no weaker than a full handshake (README.md, "TLS session resumption").
@Suite("TLS session resumption")
struct TLSResumptionTests {
    /// A client context that keeps OpenSSL's records (it must, to read the ticket), for `certificate`.
    private func client(_ fixture: TLSFixture, certificate: String? = nil, key: String? = nil) throws -> TLSContext {
        var configuration = TLSConfiguration.client(
            trustedCAPath: fixture.certs.caCertificatePath,
            certificateChainPath: certificate ?? fixture.certs.clientCertificatePath,
            privateKeyPath: key ?? fixture.certs.clientKeyPath)
        configuration.recordLayer = .openSSL
        return try TLSContext(configuration)
    }

    /// A server context as memo-server makes one (tickets on, its records handed off), checking `crl` if given.
    private func server(_ fixture: TLSFixture, crl: String? = nil, ticketLifetime: Int? = 3600) throws -> TLSContext {
        var configuration = TLSConfiguration.server(
            certificateChainPath: fixture.certs.serverCertificatePath, privateKeyPath: fixture.certs.serverKeyPath,
            trustedCAPath: fixture.certs.caCertificatePath)
        configuration.revocationListPath = crl
        configuration.sessionTicketLifetime = ticketLifetime
        return try TLSContext(configuration)
    }

    /// One connection: the handshake, then a message each way (the client reads the ticket with the server's).
    /// - Returns: both engines and the session the client took from the ticket, if any.
    private func connect(client: TLSContext, server: TLSContext, offering session: [UInt8]? = nil) throws
        -> (client: TLSEngine, server: TLSEngine, session: [UInt8]?)
    {
        let clientEngine = try TLSEngine(context: client, serverName: "localhost", session: session)
        let serverEngine = try TLSEngine(context: server)
        let outcome = pumpHandshake(client: clientEngine, server: serverEngine)
        try #require(outcome.clientDone && outcome.serverDone, "\(String(describing: outcome.serverError))")
        try serverEngine.writePlaintext(Array("welcome".utf8))
        var atClient: [UInt8] = []
        _ = try transfer(from: serverEngine, to: clientEngine, chunk: 1 << 20, into: &atClient)
        #expect(atClient == Array("welcome".utf8))
        try clientEngine.writePlaintext(Array("hello".utf8))
        var atServer: [UInt8] = []
        _ = try transfer(from: clientEngine, to: serverEngine, chunk: 1 << 20, into: &atServer)
        #expect(atServer == Array("hello".utf8))
        return (clientEngine, serverEngine, clientEngine.takeNewSession())
    }

    /// The server's ticket gives the client a session; offered on the next connection, the handshake resumes (no
    /// certificates), the server still knows the client's certificate, and the server's records are handed off
    /// after its ticket (its own record layer continues the sequence numbers OpenSSL used for the ticket: the
    /// client, on OpenSSL, would fail to open the next record otherwise).
    @Test func aClientResumesWithTheSessionFromTheServersTicket() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let clientContext = try client(fixture)
            let serverContext = try server(fixture)
            let first = try connect(client: clientContext, server: serverContext)
            #expect(!first.client.resumedSession && !first.server.resumedSession)
            #expect(first.server.recordsHandedOff)
            let session = try #require(first.session)
            #expect(first.client.takeNewSession() == nil)  // the same ticket is given once

            let second = try connect(client: clientContext, server: serverContext, offering: session)
            #expect(second.client.offeredSession)
            #expect(second.client.resumedSession && second.server.resumedSession)
            #expect(second.server.recordsHandedOff)
            #expect(second.server.peerSerialNumber == first.server.peerSerialNumber)
            #expect(second.server.peerCommonName == first.server.peerCommonName)
            #expect(second.session != nil)  // a resumed connection gets a new ticket too
        }
    }

    /// A server context made later in the same process (a certificate reload) opens the tickets of the one
    /// before: the ticket keys are the process's.
    @Test func aTicketStaysGoodAcrossANewServerContextOfTheSameProcess() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let clientContext = try client(fixture)
            let session = try #require(try connect(client: clientContext, server: try server(fixture)).session)
            let resumed = try connect(client: clientContext, server: try server(fixture), offering: session)
            #expect(resumed.server.resumedSession)
        }
    }

    /// A client whose certificate was revoked after its full handshake offers its ticket to a server that has
    /// loaded the new list since: the ticket is not used (the certificate it carries is checked against the list
    /// of the moment), the handshake goes on as a full one, and the certificate is refused as revoked.
    @Test func aRevokedClientThatResumesIsRefusedAsRevoked() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let alice = try CertificateAuthority.issueClient(name: "alice", directory: dir, validity: .days(1))
            let aliceContext = try client(fixture, certificate: alice.certificatePath, key: alice.keyPath)
            let session = try #require(try connect(client: aliceContext, server: try server(fixture)).session)

            _ = try CertificateAuthority.revoke("alice", directory: dir)
            let reloaded = try server(fixture, crl: dir + "/ca.crl")
            let clientEngine = try TLSEngine(context: aliceContext, serverName: "localhost", session: session)
            #expect(clientEngine.offeredSession)
            let refused = pumpHandshake(client: clientEngine, server: try TLSEngine(context: reloaded))
            #expect(refused.serverError?.kind == .certificateRevoked, "\(String(describing: refused.serverError))")
            #expect(refused.clientError?.kind == .certificateRevoked, "\(String(describing: refused.clientError))")

            // Another client of the CA still resumes under the same list.
            let bobContext = try client(fixture)
            let bobSession = try #require(try connect(client: bobContext, server: reloaded).session)
            #expect(try connect(client: bobContext, server: reloaded, offering: bobSession).server.resumedSession)
        }
    }

    /// Bytes that are not a session, and a session past its lifetime, are not offered: a full handshake, no error.
    @Test func aCorruptOrExpiredSessionIsNotOfferedAndTheHandshakeIsFull() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let clientContext = try client(fixture)
            let serverContext = try server(fixture)
            let session = try #require(try connect(client: clientContext, server: serverContext).session)

            var corrupt = session
            corrupt.removeLast(session.count / 2)
            for bytes in [corrupt, Array("not a session".utf8), []] {
                let full = try connect(client: clientContext, server: serverContext, offering: bytes)
                #expect(!full.client.offeredSession)
                #expect(!full.server.resumedSession)
            }

            // The same session, made two hours old: past the server's one-hour lifetime.
            let expired = try #require(Self.aged(session, seconds: 7200))
            let full = try connect(client: clientContext, server: serverContext, offering: expired)
            #expect(!full.client.offeredSession)
            #expect(!full.server.resumedSession)
        }
    }

    /// A server with tickets off sends none, so the client has nothing to save.
    @Test func aServerWithoutTicketsGivesNoSession() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let plain = try connect(client: try client(fixture), server: try server(fixture, ticketLifetime: nil))
            #expect(plain.session == nil)
            #expect(plain.server.recordsHandedOff)
        }
    }

    /// The cache's name for a session changes with the server address, the CA and the client certificate, so a
    /// session is never offered to another server, under another CA or with another certificate.
    @Test func theSessionCacheKeyNamesServerCAAndCertificate() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            try FileManager.default.createDirectory(atPath: dir + "/other", withIntermediateDirectories: true)
            let other = try TLSFixture(directory: dir + "/other")
            let alice = try CertificateAuthority.issueClient(name: "alice", directory: dir, validity: .days(1))
            let base = try #require(try client(fixture).sessionCacheKey(server: "127.0.0.1:7420"))
            #expect(base.utf8.count == 64)
            #expect(try client(fixture).sessionCacheKey(server: "127.0.0.1:7420") == base)
            #expect(try client(fixture).sessionCacheKey(server: "127.0.0.1:7421") != base)
            #expect(
                try client(fixture, certificate: alice.certificatePath, key: alice.keyPath)
                    .sessionCacheKey(server: "127.0.0.1:7420") != base)
            var otherCA = TLSConfiguration.client(
                trustedCAPath: other.certs.caCertificatePath, certificateChainPath: fixture.certs.clientCertificatePath,
                privateKeyPath: fixture.certs.clientKeyPath)
            otherCA.recordLayer = .openSSL
            #expect(try TLSContext(otherCA).sessionCacheKey(server: "127.0.0.1:7420") != base)
            #expect(try server(fixture).sessionCacheKey(server: "127.0.0.1:7420") == nil)
        }
    }

    /// `session` with its creation time moved `seconds` into the past (as if saved that long ago).
    private static func aged(_ session: [UInt8], seconds: Int) -> [UInt8]? {
        let parsed = session.withUnsafeBufferPointer { bytes -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = bytes.baseAddress
            return d2i_SSL_SESSION(nil, &cursor, bytes.count)
        }
        guard let parsed else { return nil }
        defer { SSL_SESSION_free(parsed) }
        _ = SSL_SESSION_set_time(parsed, SSL_SESSION_get_time(parsed) - seconds)
        let length = i2d_SSL_SESSION(parsed, nil)
        guard length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        _ = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_SSL_SESSION(parsed, &cursor)
        }
        return bytes
    }
}
