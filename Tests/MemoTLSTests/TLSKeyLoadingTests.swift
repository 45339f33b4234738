import Foundation
import MemoPKI
import MemoTLS
import MemoTestSupport
import TLSTestSupport
import Testing

/// Private keys are decoded as EC first (the keys `memo-server certs` makes, and the cheap path at a client's
/// start); every other key must still load through OpenSSL's general decoder, as before.
@Suite("Loading private keys of every kind")
struct TLSKeyLoadingTests {
    /// Runs the `openssl` command line tool; fails the test when it does not succeed.
    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
    }

    /// A server certificate for localhost with a key of `algorithm` (self-signed, so that it is also the CA a
    /// client trusts): the paths of the certificate and the key.
    private func selfSigned(_ algorithm: String, in dir: String) throws -> (certificate: String, key: String) {
        let name = algorithm.replacingOccurrences(of: ":", with: "-")
        let certificate = dir + "/\(name).crt"
        let key = dir + "/\(name).key"
        try openssl([
            "req", "-x509", "-newkey", algorithm, "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
        ])
        return (certificate, key)
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is not installed"),
        arguments: ["rsa:2048", "ed25519"])
    func aServerWithANonECKeyCompletesAMutualHandshake(algorithm: String) throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir + "/ca")
            let own = try selfSigned(algorithm, in: dir)
            let server = try TLSEngine(
                context: TLSContext(
                    .server(
                        certificateChainPath: own.certificate, privateKeyPath: own.key,
                        trustedCAPath: fixture.certs.caCertificatePath)))
            let client = try TLSEngine(
                context: fixture.clientContext(trustedCA: own.certificate), serverName: "localhost")
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.clientError == nil)
            #expect(outcome.serverError == nil)
            #expect(outcome.clientDone && outcome.serverDone)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is not installed"))
    func anECKeyInSEC1FormLoadsAsWellAsThePKCS8OneCertsWrites() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir + "/ca")
            let sec1 = dir + "/client-sec1.key"
            try openssl(["ec", "-in", fixture.certs.clientKeyPath, "-out", sec1])
            let pem = try String(contentsOfFile: sec1, encoding: .utf8)
            #expect(pem.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
            let client = try TLSEngine(context: fixture.clientContext(key: sec1), serverName: "localhost")
            let server = try TLSEngine(context: fixture.serverContext())
            let outcome = pumpHandshake(client: client, server: server)
            #expect(outcome.clientError == nil)
            #expect(outcome.serverError == nil)
            #expect(outcome.clientDone && outcome.serverDone)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is not installed"))
    func aKeyThatDoesNotMatchItsCertificateIsStillRefusedSayingSo() throws {
        try withTemporaryDirectory { dir in
            let fixture = try TLSFixture(directory: dir + "/ca")
            let key = dir + "/other-p256.key"
            try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
            let error = try #require(throws: TLSError.self) { try fixture.clientContext(key: key) }
            // Both decoders read the key; OpenSSL refuses it beside the certificate, and the error names the file.
            #expect(error.description.contains(key))
        }
    }
}
