import COpenSSL
import Foundation
import MemoPKI
import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

@Suite("Certificate authority: files, modes and contents")
struct TLSCertificateTests {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? Int)
    }

    @Test func initWritesSixFilesWithPrivateKeysAndPrivateDirectory() throws {
        try withTemporaryDirectory { dir in
            let target = dir + "/certs/nested"
            let certs = try CertificateAuthority.initialize(directory: target, caValidity: .days(1))
            for file in certs.files { #expect(FileManager.default.fileExists(atPath: file), "\(file)") }
            #expect(try mode(certs.caKeyPath) == 0o600)
            #expect(try mode(certs.serverKeyPath) == 0o600)
            #expect(try mode(certs.clientKeyPath) == 0o600)
            let certificateMode = try mode(certs.caCertificatePath)  // 0644, or narrower under a strict umask
            #expect(certificateMode & ~0o644 == 0 && certificateMode & 0o400 != 0)
            #expect(try mode(target) == 0o700)
            #expect(certs.serverNames == ["DNS:localhost", "IP:127.0.0.1", "IP:::1"])
        }
    }

    @Test func initRefusesToOverwriteWithoutForce() throws {
        try withTemporaryDirectory { dir in
            let first = try CertificateAuthority.initialize(directory: dir, caValidity: .days(1))
            let before = try Data(contentsOf: URL(fileURLWithPath: first.caKeyPath))
            let error = #expect(throws: TLSError.self) {
                try CertificateAuthority.initialize(directory: dir, caValidity: .days(1))
            }
            #expect(error?.kind == .fileExists)
            #expect(error?.description.contains(first.caCertificatePath) == true)
            #expect(try Data(contentsOf: URL(fileURLWithPath: first.caKeyPath)) == before)

            // One existing file is enough to refuse, and it is the one named.
            try FileManager.default.removeItem(atPath: dir)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: dir + "/server.key", contents: Data("old".utf8)))
            let single = #expect(throws: TLSError.self) { try CertificateAuthority.initialize(directory: dir) }
            #expect(single?.description.contains(dir + "/server.key") == true)
            #expect(!FileManager.default.fileExists(atPath: dir + "/ca.crt"))
        }
    }

    @Test func initWithForceReplacesFilesAndKeepsKeysPrivate() throws {
        try withTemporaryDirectory { dir in
            let first = try CertificateAuthority.initialize(directory: dir, caValidity: .days(1))
            let before = try Data(contentsOf: URL(fileURLWithPath: first.caKeyPath))
            // A key left world-readable must not pass its mode on to the replacement.
            chmod(first.serverKeyPath, 0o644)
            let second = try CertificateAuthority.initialize(directory: dir, force: true, caValidity: .days(1))
            #expect(try Data(contentsOf: URL(fileURLWithPath: second.caKeyPath)) != before)
            #expect(try mode(second.serverKeyPath) == 0o600)
        }
    }

    @Test func extraHostsBecomeIPOrDNSNames() throws {
        try withTemporaryDirectory { dir in
            let certs = try CertificateAuthority.initialize(
                directory: dir, hosts: ["10.1.2.3", "memo.example.org", "fe80::1", "localhost"],
                caValidity: .days(1))
            #expect(
                certs.serverNames == [
                    "DNS:localhost", "IP:127.0.0.1", "IP:::1", "IP:10.1.2.3", "DNS:memo.example.org", "IP:fe80::1",
                ])
            let error = #expect(throws: TLSError.self) {
                try CertificateAuthority.initialize(directory: dir + "/bad", hosts: ["bad host,DNS:evil"])
            }
            #expect(error?.kind == .invalidArgument)
        }
    }

    @Test(arguments: [("alice", true), ("bob-2_x.y", false)])
    func issuedClientCarriesNameAndRoleThroughTheHandshake(name: String, readOnly: Bool) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir)
            let issued = try CertificateAuthority.issueClient(
                name: name, directory: dir, readOnly: readOnly, validity: .days(1))
            #expect(issued.certificatePath == dir + "/\(name).crt")
            #expect(try mode(issued.keyPath) == 0o600)
            let client = try TLSEngine(
                context: fixture.clientContext(certificate: issued.certificatePath, key: issued.keyPath),
                serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            try #require(outcome.serverDone)
            #expect(server.peerCommonName == name)
            #expect(server.peerRole == (readOnly ? .readOnly : .readWrite))
        }
    }

    @Test func issueClientRefusesOverwriteAndBadNames() throws {
        try withTemporaryDirectory { dir in
            _ = try TLSFixture(directory: dir)
            _ = try CertificateAuthority.issueClient(name: "carol", directory: dir, validity: .days(1))
            let again = #expect(throws: TLSError.self) {
                try CertificateAuthority.issueClient(name: "carol", directory: dir)
            }
            #expect(again?.kind == .fileExists)
            _ = try CertificateAuthority.issueClient(name: "carol", directory: dir, force: true, validity: .days(1))
            for bad in ["", "../evil", "a b", "ca", "server", ".hidden", "ü", String(repeating: "x", count: 65)] {
                let error = #expect(throws: TLSError.self, "\(bad)") {
                    try CertificateAuthority.issueClient(name: bad, directory: dir)
                }
                #expect(error?.kind == .invalidArgument)
            }
            let noCA = #expect(throws: TLSError.self) {
                try CertificateAuthority.issueClient(name: "dave", directory: dir + "/empty")
            }
            #expect(noCA?.kind == .fileSystem)
        }
    }

    @Test func certificatesAreV3P256SignedWithSHA256AndRandomSerials() throws {
        try withTemporaryDirectory { dir in
            let certs = try CertificateAuthority.initialize(directory: dir, caValidity: .days(1))
            var serials: Set<String> = []
            for path in [certs.caCertificatePath, certs.serverCertificatePath, certs.clientCertificatePath] {
                let file = try #require(BIO_new_file(path, "r"))
                defer { BIO_free(file) }
                let cert = try #require(PEM_read_bio_X509(file, nil, nil, nil))
                defer { X509_free(cert) }
                #expect(X509_get_version(cert) == 2)
                #expect(X509_get_signature_nid(cert) == NID_ecdsa_with_SHA256)
                let key = try #require(X509_get0_pubkey(cert))
                #expect(EVP_PKEY_get_base_id(key) == EVP_PKEY_EC)
                #expect(EVP_PKEY_get_bits(key) == 256)
                let serial = try #require(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nil))
                defer { BN_free(serial) }
                #expect(BN_num_bits(serial) > 64 && BN_num_bits(serial) <= 128)
                let hex = try #require(BN_bn2hex(serial))
                serials.insert(String(cString: hex))
                CMemoSSL_free(hex)
            }
            #expect(serials.count == 3)
        }
    }
}
