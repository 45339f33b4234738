import Foundation
import MemoPKI
@testable import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

/// A client context that reads its certificate, key and CA only when a handshake needs them
/// (`TLSConfiguration.deferClientMaterial`): a resumed handshake reads none, a full one behaves as with everything
/// loaded at start, and a file that will not load is reported as it is at start.
@Suite("TLS client material loaded when a handshake needs it")
struct TLSDeferredMaterialTests {
    /// A client context as memo-client makes one when it has a saved session: OpenSSL's records, files deferred.
    private func client(
        _ fixture: TLSFixture, key: String? = nil, trustedCA: String? = nil, deferred: Bool = true
    ) throws -> TLSContext {
        var configuration = TLSConfiguration.client(
            trustedCAPath: trustedCA ?? fixture.certs.caCertificatePath,
            certificateChainPath: fixture.certs.clientCertificatePath,
            privateKeyPath: key ?? fixture.certs.clientKeyPath)
        configuration.recordLayer = .openSSL
        configuration.deferClientMaterial = deferred
        return try TLSContext(configuration)
    }

    /// A server context with tickets (or, with `ticketLifetime` nil, one that resumes nothing).
    private func server(_ fixture: TLSFixture, ticketLifetime: Int? = 3600) throws -> TLSContext {
        var configuration = TLSConfiguration.server(
            certificateChainPath: fixture.certs.serverCertificatePath, privateKeyPath: fixture.certs.serverKeyPath,
            trustedCAPath: fixture.certs.caCertificatePath)
        configuration.sessionTicketLifetime = ticketLifetime
        return try TLSContext(configuration)
    }

    /// One connection, its handshake and a message from the server (which carries the ticket to the client).
    private func connect(client: TLSContext, server: TLSContext, offering session: [UInt8]? = nil) throws
        -> (client: TLSEngine, server: TLSEngine, outcome: HandshakeOutcome, session: [UInt8]?)
    {
        let clientEngine = try TLSEngine(context: client, serverName: "localhost", session: session)
        let serverEngine = try TLSEngine(context: server)
        let outcome = pumpHandshake(client: clientEngine, server: serverEngine)
        guard outcome.clientDone, outcome.serverDone else { return (clientEngine, serverEngine, outcome, nil) }
        try serverEngine.writePlaintext(Array("welcome".utf8))
        var atClient: [UInt8] = []
        _ = try transfer(from: serverEngine, to: clientEngine, chunk: 1 << 20, into: &atClient)
        #expect(atClient == Array("welcome".utf8))
        return (clientEngine, serverEngine, outcome, clientEngine.takeNewSession())
    }

    /// A full handshake loads the certificate and key (the server sees the client's name) and the CA (once); a
    /// resumed one, on a new context as the next memo-client process makes it, loads neither, and still
    /// resumes with the key file gone.
    @Test func aFullHandshakeLoadsTheFilesAndAResumedOneLoadsNone() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let serverContext = try server(fixture)
            let first = try client(fixture)
            #expect(first.deferredLoads == (0, 0))
            let full = try connect(client: first, server: serverContext)
            try #require(full.outcome.clientDone && full.outcome.serverDone, "\(String(describing: full.outcome))")
            #expect(full.server.peerCommonName == "client")
            #expect(first.deferredLoads == (1, 1))
            let session = try #require(full.session)

            let next = try client(fixture)
            try FileManager.default.removeItem(atPath: fixture.certs.clientKeyPath)
            let resumed = try connect(client: next, server: serverContext, offering: session)
            #expect(resumed.client.offeredSession && resumed.server.resumedSession)
            #expect(resumed.server.peerCommonName == "client")
            #expect(next.deferredLoads == (0, 0))
        }
    }

    /// A saved session the server does not take (here a server that resumes nothing; in life a restarted one)
    /// means a full handshake: the deferred certificate is presented when the server asks for it, and the server's
    /// certificate is verified against the CA loaded then.
    @Test func aSessionTheServerDoesNotResumeMeansAFullHandshakeThatPresentsTheCertificate() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let session = try #require(try connect(client: try client(fixture), server: try server(fixture)).session)
            let context = try client(fixture)
            let full = try connect(client: context, server: try server(fixture, ticketLifetime: nil), offering: session)
            #expect(full.client.offeredSession)
            #expect(full.outcome.clientDone && full.outcome.serverDone, "\(String(describing: full.outcome))")
            #expect(!full.server.resumedSession)
            #expect(full.server.peerCommonName == "client")
            #expect(context.deferredLoads == (1, 1))
        }
    }

    /// The CA is still the judge: a deferred client trusting another CA refuses the server as unknown, as a
    /// client with its CA loaded at start does.
    @Test func aDeferredClientRefusesAServerOfAnotherCAAsAnEagerOneDoes() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            try FileManager.default.createDirectory(atPath: dir + "/other", withIntermediateDirectories: true)
            let other = try TLSFixture(directory: dir + "/other")
            for deferred in [true, false] {
                let context = try client(fixture, trustedCA: other.certs.caCertificatePath, deferred: deferred)
                let refused = try connect(client: context, server: try server(fixture))
                #expect(refused.outcome.clientError?.kind == .unknownCA, "\(String(describing: refused.outcome))")
                #expect(!refused.outcome.serverDone)
            }
        }
    }

    /// A key file that exists but is not a key: loaded at start it fails the context; deferred, the full
    /// handshake that needs it fails with the same error (operation, kind and reasons), not a bare TLS failure.
    @Test func aKeyThatDoesNotLoadInAHandshakeIsReportedAsAtStart() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let garbage = dir + "/garbage.key"
            try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: garbage))
            var atStart: TLSError?
            do { _ = try client(fixture, key: garbage, deferred: false) } catch { atStart = error as? TLSError }
            let expected = try #require(atStart)
            #expect(expected.operation == "loading private key \(garbage)")

            let context = try client(fixture, key: garbage)
            let failed = try connect(client: context, server: try server(fixture))
            let error = try #require(failed.outcome.clientError)
            #expect(Array(error.description.utf8) == Array(expected.description.utf8))
            #expect(error.kind == expected.kind)
        }
    }

    /// A deferred file must still exist and open as a file when the context is made: a key path that is a folder
    /// fails there, with the error loading it gives, and not only when a full handshake comes.
    @Test func aKeyPathThatDoesNotOpenAsAFileFailsWhenTheContextIsMade() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let folder = dir + "/folder.key"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var eager: TLSError?
            do { _ = try client(fixture, key: folder, deferred: false) } catch { eager = error as? TLSError }
            var deferred: TLSError?
            do { _ = try client(fixture, key: folder) } catch { deferred = error as? TLSError }
            let expected = try #require(eager)
            let got = try #require(deferred)
            #expect(Array(got.description.utf8) == Array(expected.description.utf8))
            var missing: TLSError?
            do { _ = try client(fixture, key: dir + "/none.key") } catch { missing = error as? TLSError }
            #expect(missing?.kind == .fileSystem)
        }
    }
}
