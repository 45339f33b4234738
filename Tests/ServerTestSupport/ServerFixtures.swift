import Foundation
import MemoModel
import MemoNet
import MemoPKI
import MemoProbe
import MemoServer
import MemoStore
import MemoTLS
import MemoTestSupport
import MemoWire
import Testing

/// Certificates for a test, made fresh with a short validity.
package struct TestCertificates {
    package let directory: TemporaryDirectory
    package var path: String { directory.path }

    package init() throws {
        directory = try TemporaryDirectory()
        _ = try CertificateAuthority.initialize(
            directory: directory.path, caValidity: .days(1), serverValidity: .days(1), clientValidity: .days(1))
        _ = try CertificateAuthority.issueClient(
            name: "reader", directory: directory.path, readOnly: true, validity: .days(1))
    }

    package func client(_ name: String = "client") -> ProbeConnection.Identity {
        ProbeConnection.Identity(ca: path + "/ca.crt", certificate: path + "/\(name).crt", key: path + "/\(name).key")
    }
}

/// A server on loopback port 0 with its own certificates and a store; stopped by `stop()`.
package struct TestServer {
    package let certificates: TestCertificates
    package let store: any ServingStore
    package let server: MemoServer
    package var address: SocketAddress { server.boundAddress }

    package init(
        store: any ServingStore = MemoryStore(), limits: ServerLimits = ServerLimits(), log: ServerLog = .silent,
        records: TLSRecordLayerChoice = .handOff, metrics: Bool = false, sessionTickets: Bool = true,
        threads: Int? = nil
    ) throws {
        certificates = try TestCertificates()
        self.store = store
        var configuration = ServerConfiguration(listen: "127.0.0.1:0", certsDirectory: certificates.path)
        configuration.limits = limits
        configuration.tlsRecords = records
        if !sessionTickets { configuration.sessionTicketLifetime = nil }
        if metrics { configuration.metrics = "127.0.0.1:0" }
        if let threads { configuration.threads = threads }
        server = try MemoServer.start(configuration, store: store, log: log)
    }

    package func connect(_ name: String = "client", hello: Bool = true) throws -> TestClient {
        let client = try TestClient(address: address, identity: certificates.client(name))
        if hello { try client.hello() }
        return client
    }

    package func stop() {
        server.shutdown(timeout: 5)
        store.close()
    }
}

/// The tests' name for the probe client.
package typealias TestClient = ProbeConnection
