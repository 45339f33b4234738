import MemoPKI
import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

@Suite("TLS handshakes that must fail, and how they are reported")
struct TLSRefusalTests {
    @Test func clientWithoutCertificateIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(
                context: fixture.clientContext(certificate: .some(nil), key: .some(nil)), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            let serverError = try #require(outcome.serverError)
            #expect(serverError.kind == .noClientCertificate)
            #expect(serverError.description.contains("client sent no certificate"))
            #expect(outcome.clientError?.kind == .noClientCertificate)
            #expect(!outcome.serverDone)
        }
    }

    @Test func clientWithoutCertificateIsAcceptedWhenNotRequired() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let client = try TLSEngine(
                context: fixture.clientContext(certificate: .some(nil), key: .some(nil)), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext(requireClientCertificate: false))
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.serverError == nil)
            #expect(outcome.serverDone)
            #expect(server.peerCommonName == nil)
            #expect(server.peerRole == .unknown)
        }
    }

    @Test func clientCertificateFromAnotherCAIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir + "/main")
            let other = try TLSFixture(directory: dir + "/other")  // a second, unrelated CA
            let client = try TLSEngine(
                context: fixture.clientContext(
                    certificate: other.certs.clientCertificatePath, key: other.certs.clientKeyPath),
                serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            let serverError = try #require(outcome.serverError)
            #expect(serverError.kind == .unknownCA)
            #expect(serverError.description.contains("certificate signed by an unknown CA"))
            #expect(serverError.verifyResult != nil)
            #expect(outcome.clientError?.kind == .unknownCA)
        }
    }

    @Test func expiredClientCertificateIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let issued = try CertificateAuthority.issueClient(name: "old", directory: dir, validity: .expired)
            let client = try TLSEngine(
                context: fixture.clientContext(certificate: issued.certificatePath, key: issued.keyPath),
                serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.serverError?.kind == .certificateExpired)
            #expect(outcome.serverError?.verifyResult == "certificate has expired")
            let clientError = try #require(outcome.clientError)
            #expect(clientError.kind == .certificateExpired)
            #expect(clientError.description.contains("reported by the peer's alert"))
        }
    }

    @Test func notYetValidClientCertificateIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let issued = try CertificateAuthority.issueClient(name: "future", directory: dir, validity: .notYetValid)
            let client = try TLSEngine(
                context: fixture.clientContext(certificate: issued.certificatePath, key: issued.keyPath),
                serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.serverError?.kind == .certificateNotYetValid)
            // The server's alert for this case is the generic "bad certificate".
            #expect(outcome.clientError?.kind == .certificateRejected)
        }
    }

    @Test func clientTrustingTheWrongCARefusesTheServer() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir + "/main")
            let other = try TLSFixture(directory: dir + "/other")
            let client = try TLSEngine(
                context: fixture.clientContext(trustedCA: other.certs.caCertificatePath), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            let clientError = try #require(outcome.clientError)
            #expect(clientError.kind == .unknownCA)
            #expect(!outcome.clientDone)
            #expect(outcome.serverError?.kind == .unknownCA)
        }
    }

    @Test func expiredServerCertificateIsRefusedByTheClient() throws {
        try withTemporaryDirectory { dir in
            let certs = try CertificateAuthority.initialize(
                directory: dir, caValidity: .days(1), serverValidity: .expired, clientValidity: .days(1))
            let fixture = TLSFixture(directory: dir, certs: certs)
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.clientError?.kind == .certificateExpired)
        }
    }

    @Test(arguments: ["localhost", "127.0.0.1", "::1", "memo.example.org", "192.0.2.7"])
    func serverNameInTheCertificateIsAccepted(name: String) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir, hosts: ["memo.example.org", "192.0.2.7"])
            let client = try TLSEngine(context: fixture.clientContext(), serverName: name)
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.clientError == nil)
            #expect(outcome.serverDone)
        }
    }

    @Test(arguments: ["example.com", "10.0.0.1", "other.localhost", "::2"])
    func serverNameNotInTheCertificateIsRefused(name: String) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir, hosts: ["memo.example.org", "192.0.2.7"])
            let client = try TLSEngine(context: fixture.clientContext(), serverName: name)
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            let clientError = try #require(outcome.clientError)
            #expect(clientError.kind == .hostnameMismatch)
            #expect(!outcome.serverDone)
        }
    }

    @Test func tls11OnlyClientIsRefused() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            // OpenSSL 3's default security level forbids TLS 1.1 even on the client; level 0 lets it offer it.
            let old = try TLSContext(
                TLSConfiguration(
                    role: .client, certificateChainPath: fixture.certs.clientCertificatePath,
                    privateKeyPath: fixture.certs.clientKeyPath, trustedCAPath: fixture.certs.caCertificatePath,
                    minimumVersion: .tls1_1, maximumVersion: .tls1_1, securityLevel: 0))
            let client = try TLSEngine(context: old, serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            let serverError = try #require(outcome.serverError)
            #expect(serverError.kind == .protocolVersion)
            #expect(serverError.description.contains("protocol version not supported"))
            #expect(outcome.clientError?.kind == .protocolVersion)
        }
    }

    @Test(arguments: [
        Array("hello, this is not TLS\r\n".utf8),
        Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8),
        Array("SSH-2.0-OpenSSH_9.6\r\n".utf8),
        [0x80, 0x2e, 0x01, 0x00, 0x02] + [UInt8](repeating: 0xff, count: 60),
        (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) },
    ])
    func garbageIsReportedAsNotTLS(garbage: [UInt8]) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            for chunk in [1, garbage.count] {
                let server = try TLSEngine(context: fixture.serverContext())
                var error: TLSError?
                var offset = 0
                while offset < garbage.count, error == nil {
                    let end = min(offset + chunk, garbage.count)
                    server.feed(garbage[offset..<end])
                    offset = end
                    do throws(TLSError) { _ = try server.handshake() } catch let caught { error = caught }
                }
                let refusal = try #require(error, "chunk \(chunk)")
                #expect(refusal.kind == .notTLS, "chunk \(chunk): \(refusal)")
                // The engine stays failed rather than crashing on further use.
                #expect(throws: TLSError.self) { try server.handshake() }
            }
        }
    }

    @Test func garbageSeenThroughReadPlaintextIsNotTLSOnBothSides() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let server = try TLSEngine(context: fixture.serverContext())
            server.feed(Array("PING\r\n".utf8) + [UInt8](repeating: 0, count: 10))
            var plaintext: [UInt8] = []
            let serverError = #expect(throws: TLSError.self) { try server.readPlaintext(into: &plaintext) }
            #expect(serverError?.kind == .notTLS)

            // A client whose "server" answers in plain HTTP.
            let client = try TLSEngine(context: fixture.clientContext(), serverName: "localhost")
            #expect(try client.handshake() == .wantsMore)
            #expect(client.hasOutbound)  // the ClientHello
            client.feed(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8))
            let clientError = #expect(throws: TLSError.self) { try client.readPlaintext(into: &plaintext) }
            #expect(clientError?.kind == .notTLS)
            #expect(plaintext.isEmpty)
        }
    }
}
