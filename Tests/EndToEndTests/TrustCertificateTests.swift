import Foundation
import MemoPKI
import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

@Suite("The CA's index, revocation list and server re-issue")
struct TrustCertificateTests {
    /// A server context that checks `directory/ca.crl`.
    private func serverContext(_ fixture: TLSFixture) throws -> TLSContext {
        var configuration = TLSConfiguration.server(
            certificateChainPath: fixture.certs.serverCertificatePath, privateKeyPath: fixture.certs.serverKeyPath,
            trustedCAPath: fixture.certs.caCertificatePath)
        configuration.revocationListPath = fixture.directory + "/ca.crl"
        return try TLSContext(configuration)
    }

    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL])
    func aRevokedClientIsRefusedWithCertificateRevokedOnBothSides(records: TLSRecordLayerChoice) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            _ = try CertificateAuthority.issueClient(name: "alice", directory: dir, validity: .days(1))
            let outcome = try CertificateAuthority.revoke("alice", directory: dir)
            #expect(outcome.revoked.map(\.name) == ["alice"])
            #expect(outcome.listCount == 1)

            var client = TLSConfiguration.client(
                trustedCAPath: fixture.certs.caCertificatePath, certificateChainPath: dir + "/alice.crt",
                privateKeyPath: dir + "/alice.key")
            client.recordLayer = records
            let refused = pumpHandshake(
                client: try TLSEngine(context: TLSContext(client), serverName: "localhost"),
                server: try TLSEngine(context: serverContext(fixture)))
            #expect(refused.serverError?.kind == .certificateRevoked)
            #expect(refused.serverError?.verifyResult == "certificate revoked")
            #expect(refused.clientError?.kind == .certificateRevoked)
            #expect(refused.clientError?.description.contains("certificate revoked") == true)

            // The CA's other clients are still let in with the list loaded.
            let accepted = pumpHandshake(
                client: try TLSEngine(context: fixture.clientContext(), serverName: "localhost"),
                server: try TLSEngine(context: serverContext(fixture)))
            #expect(accepted.serverDone && accepted.serverError == nil)
        }
    }

    @Test func revokingKeepsEverySerialAlreadyListedAndIsIdempotent() throws {
        try withTemporaryDirectory { dir in
            _ = try TLSFixture(directory: dir)
            let alice = try CertificateAuthority.issueClient(name: "alice", directory: dir, validity: .days(1))
            let serial = try CertificateInfo(path: alice.certificatePath).serial
            _ = try CertificateAuthority.issueClient(name: "bob", directory: dir, readOnly: true, validity: .days(1))
            _ = try CertificateAuthority.revoke(serial.lowercased(), directory: dir)  // by serial, any case
            let second = try CertificateAuthority.revoke("bob", directory: dir)
            #expect(second.listCount == 2)
            let again = try CertificateAuthority.revoke("alice", directory: dir)
            #expect(again.revoked.isEmpty && again.alreadyRevoked.map(\.name) == ["alice"])
            let list = try RevocationList.load(path: dir + "/ca.crl", caCertificatePath: dir + "/ca.crt")
            #expect(list.number == 2)
            #expect(list.serials.contains(serial) && list.entries.count == 2)

            // The server's certificate is replaced, not revoked; a name nobody has is an error.
            #expect(throws: TLSError.self) { try CertificateAuthority.revoke("memo server", directory: dir) }
            #expect(throws: TLSError.self) { try CertificateAuthority.revoke("nobody", directory: dir) }
            // A serial from before the index (at least 16 hex digits) goes on the list all the same.
            let unknown = try CertificateAuthority.revoke("0123456789ABCDEF01", directory: dir)
            #expect(unknown.unknownSerial == "123456789ABCDEF01" && unknown.listCount == 3)
        }
    }

    @Test func certsListShowsEveryCertificateAndSaysSoWhenTheCAHasNoIndex() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        try OperatorCertificates.certs(["client", "bob", "--read-only", "--days", "3", "--dir", certs.path])
        try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        let (status, out, err) = try runTool("memo-server", ["certs", "list", "--dir", certs.path])
        #expect(status == 0 && err.isEmpty)
        let rows = out.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.first == ["NAME", "ROLE", "SERIAL", "EXPIRES", "SUPERSEDED", "REVOKED"])
        let bob = try #require(rows.first { $0.first == "bob" })
        #expect(bob[1] == "read-only" && bob.last == "-")
        let expiry = try #require(UTCTime.parse(String(bob[3])))
        #expect(abs(expiry - UTCTime.now() - 3 * 86_400) < 600)
        let alice = try #require(rows.first { $0.first == "alice" })
        #expect(alice.last.flatMap { UTCTime.parse(String($0)) } != nil)
        #expect(rows.contains { $0.first == "memo" && $0.contains("server") })

        // A CA made before the index: list what the folder holds, say so, and write the index on the next change.
        try FileManager.default.removeItem(atPath: certs.path + "/ca.index")
        let (oldStatus, oldOut, oldErr) = try runTool("memo-server", ["certs", "list", "--dir", certs.path])
        #expect(oldStatus == 0)
        #expect(oldErr.contains("has no ca.index"))
        #expect(oldOut.contains("bob") && oldOut.contains("client"))
        // Alice's revocation is read back from ca.crl.
        #expect(oldOut.split(separator: "\n").first { $0.hasPrefix("alice") }?.hasSuffix(" -") == false)
        try OperatorCertificates.certs(["client", "carol", "--dir", certs.path])
        try OperatorCertificates.certs(["revoke", "bob", "--dir", certs.path])
        let written = try CertificateIndex.load(directory: certs.path)
        #expect(written.source == .index)
        #expect(written.entries.map(\.name).sorted() == ["alice", "bob", "carol", "client", "memo server"])
    }

    @Test func certsListMarksAReissuedServerCertificateAndAClientReissuedUnderItsNameAsSuperseded() throws {
        let certs = try OperatorCertificates(clients: ["alice", "bob"])
        func rows() throws -> [[Substring]] {
            let (status, out, err) = try runTool("memo-server", ["certs", "list", "--dir", certs.path])
            #expect(status == 0, "\(err)")
            return out.split(separator: "\n").dropFirst()
                .map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        }
        // Nothing re-issued yet: no row is superseded (SUPERSEDED is the column before REVOKED).
        #expect(try rows().allSatisfy { $0.dropLast().last == "-" })
        let firstServer = try CertificateInfo(path: certs.path + "/server.crt").serial
        let firstAlice = try CertificateInfo(path: certs.path + "/alice.crt").serial
        try OperatorCertificates.certs(["server", "--host", "memo.example", "--dir", certs.path])
        try OperatorCertificates.certs(["client", "alice", "--force", "--dir", certs.path])
        let secondServer = try CertificateInfo(path: certs.path + "/server.crt").serial
        let secondAlice = try CertificateInfo(path: certs.path + "/alice.crt").serial
        let listed = try rows()
        func row(_ serial: String) throws -> [Substring] {
            try #require(listed.first { $0.dropLast(3).last == Substring(serial) })
        }
        #expect(try row(firstServer).dropLast().last.map(String.init) == secondServer)
        #expect(try row(firstAlice).dropLast().last.map(String.init) == secondAlice)
        #expect(try row(secondServer).dropLast().last == "-")
        #expect(try row(secondAlice).dropLast().last == "-")
        // Bob's certificate and the first client's are not touched by Alice's.
        #expect(listed.filter { $0.first == "bob" || $0.first == "client" }.allSatisfy { $0.dropLast().last == "-" })
    }

    @Test func certsServerReissuesOnlyTheServerCertificateForANewName() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let caBefore = try Data(contentsOf: URL(fileURLWithPath: dir + "/ca.crt"))
            let oldServer = try CertificateInfo(path: dir + "/server.crt")
            let out = try OperatorCertificates.certs(["server", "--host", "memo.example", "--dir", dir])
            #expect(out.contains("DNS:memo.example"))
            let newServer = try CertificateInfo(path: dir + "/server.crt")
            #expect(newServer.serial != oldServer.serial)
            #expect(newServer.subjectAltNames?.contains("DNS:memo.example") == true)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/ca.crt")) == caBefore)

            // The first client certificate, untouched, is accepted by the new server certificate under the new name.
            let outcome = pumpHandshake(
                client: try TLSEngine(context: fixture.clientContext(), serverName: "memo.example"),
                server: try TLSEngine(context: fixture.serverContext()))
            #expect(outcome.clientError == nil && outcome.serverError == nil && outcome.serverDone)
            let index = try CertificateIndex.load(directory: dir)
            #expect(index.entries.filter { $0.role == "server" }.count == 2)
        }
    }

    @Test func certsHelpNamesEveryCommandAndServeHelpSighup() throws {
        let (status, help, _) = try runTool("memo-server", ["certs", "--help"])
        #expect(status == 0)
        for text in ["certs init", "certs client NAME", "--days N", "certs server", "--host NAME",
                     "certs revoke NAME|SERIAL", "certs list"] {
            #expect(help.contains(text), "\(text)")
        }
        #expect(try runTool("memo-server", ["serve", "--help"]).1.contains("SIGHUP reloads"))
        #expect(try runTool("memo-server", ["certs", "revoke"]).0 == 2)
    }
}
