import ClientTestSupport
import Foundation
import MemoNet
import MemoPKI
import MemoProbe
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// A certificate folder made by the built `memo-server certs` commands, as an operator makes one.
struct OperatorCertificates {
    let directory: TemporaryDirectory
    var path: String { directory.path + "/certs" }

    init(clients: [String] = ["alice"]) throws {
        directory = try TemporaryDirectory()
        try Self.certs(["init", "--dir", directory.path + "/certs"])
        for name in clients { try Self.certs(["client", name, "--dir", directory.path + "/certs"]) }
    }

    /// Runs `memo-server certs ARGUMENTS` and requires exit 0. - Returns: its stdout.
    @discardableResult
    static func certs(_ arguments: [String]) throws -> String {
        let (status, out, err) = try runTool("memo-server", ["certs"] + arguments)
        guard status == 0 else { throw TestClient.Failure.timedOut("certs \(arguments) exit \(status): \(err)") }
        return out
    }

    func identity(_ name: String) -> ProbeConnection.Identity {
        ProbeConnection.Identity(ca: path + "/ca.crt", certificate: path + "/\(name).crt", key: path + "/\(name).key")
    }

    /// A server on port 0 serving a memory store with these certificates.
    func serve() throws -> ServerProcess {
        try ServerProcess(
            arguments: ["--listen", "127.0.0.1:0", "--store", "memory", "--certs", path], directory: directory)
    }
}

extension ServerProcess {
    /// Polls the server's log until it holds `text` `count` times; the deadline only turns a hang into a failure.
    func waitForLog(_ text: String, count: Int = 1, seconds: Double = 20) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while log.components(separatedBy: text).count - 1 < count {
            guard Date() < deadline, process.isRunning else {
                throw TestClient.Failure.timedOut("\"\(text)\" in the server log: \(log)")
            }
            usleep(20_000)
        }
    }
}

@Suite("Trust end to end through the binaries: revocation, reload, expiry", .serialized)
struct TrustEndToEndTests {
    @Test func revokedCertificateIsRefusedAfterSighupAndTheClientExitsFiveCertificateRevoked() throws {
        let certs = try OperatorCertificates(clients: ["alice", "bob"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        #expect(try runClient(["add", "before"], server: server.address, certs: certs.path, name: "alice").status == 0)

        let revoked = try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        #expect(revoked.contains("revoked alice (read-write, serial "))
        server.signal(SIGHUP)
        try server.waitForLog("reloaded certificates from \(certs.path)")

        let refused = try runClient(["list"], server: server.address, certs: certs.path, name: "alice")
        #expect(refused.status == 5)
        #expect(refused.err.contains("the server refused your certificate: it has been revoked"), "\(refused.err)")
        try server.waitForLog("TLS handshake failed: certificate revoked")
        // Everyone else is served as before.
        #expect(try runClient(["list"], server: server.address, certs: certs.path, name: "bob").status == 0)
        #expect(server.process.isRunning)
    }

    @Test func watchEndsWithExitFiveWhenItsCertificateIsRevokedWhileItWatches() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        #expect(try runClient(["add", "seen"], server: server.address, certs: certs.path, name: "alice").status == 0)
        let watch = try ClientProcess(
            ["--server", server.address, "--ca", certs.path + "/ca.crt", "--cert", certs.path + "/alice.crt",
             "--key", certs.path + "/alice.key", "watch"], directory: certs.directory)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)  // connected: the list came

        try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        server.signal(SIGHUP)
        // Retrying would be refused forever (and only every 30 s): watch stops as the other commands do.
        let status = watch.waitForExit(seconds: 20)
        #expect(status == 5, "\(watch.stderr)")
        #expect(watch.stderr.contains("the server refused your certificate: it has been revoked"), "\(watch.stderr)")
    }

    @Test func sighupReloadDropsTheConnectedRevokedClientWithGoingAwayAndKeepsTheOthers() throws {
        let certs = try OperatorCertificates(clients: ["alice", "bob"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let address = try SocketAddress(parsing: server.address)
        let alice = try TestClient(address: address, identity: certs.identity("alice"))
        try alice.hello()
        let bob = try TestClient(address: address, identity: certs.identity("bob"))
        try bob.hello()

        try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        server.signal(SIGHUP)
        let messages = try alice.readUntilClosed()
        #expect(messages.contains { if case .goingAway(.certificateRevoked, _) = $0 { true } else { false } })
        try server.waitForLog("reason=\"certificate revoked (serial ")
        #expect(server.log.contains("SIGHUP: reloading certificates"))
        #expect(server.log.contains("ca.crl (number 1, 1 revoked)"))
        // Bob's connection, open before the reload, still answers.
        guard case .memo = try bob.request(.create(id: nil, insertMicros: nil, content: "still here")) else {
            Issue.record("bob's connection did not survive the reload")
            return
        }
    }

    @Test func aReloadWithABadFileKeepsTheCertificatesLoadedBefore() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        var stopped = false
        defer {
            if !stopped {
                server.signal(SIGTERM)
                _ = server.waitForExit()
            }
        }
        let good = try Data(contentsOf: URL(fileURLWithPath: certs.path + "/server.crt"))
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: certs.path + "/server.crt"))
        server.signal(SIGHUP)
        try server.waitForLog("reload failed, keeping the certificates loaded before")
        #expect(server.log.contains("server.crt"))
        #expect(try runClient(["list"], server: server.address, certs: certs.path, name: "alice").status == 0)

        // A revocation list that the CA did not sign is refused the same way: alice stays served.
        try good.write(to: URL(fileURLWithPath: certs.path + "/server.crt"))
        let other = try OperatorCertificates(clients: [])
        try OperatorCertificates.certs(["revoke", "client", "--dir", other.path])
        try FileManager.default.copyItem(atPath: other.path + "/ca.crl", toPath: certs.path + "/ca.crl")
        server.signal(SIGHUP)
        try server.waitForLog("reload failed, keeping the certificates loaded before", count: 2)
        #expect(server.log.contains("it was not signed by the CA"))
        #expect(try runClient(["list"], server: server.address, certs: certs.path, name: "alice").status == 0)
        // Two SIGHUPs and the server still stops as SIGTERM asks, with status 0 (not 129).
        #expect(server.process.isRunning)
        server.signal(SIGTERM)
        stopped = true
        #expect(server.waitForExit() == 0)
    }

    @Test func anExpiredClientCertificateExitsFiveCertificateExpired() throws {
        let certs = try OperatorCertificates(clients: [])
        _ = try CertificateAuthority.issueClient(name: "old", directory: certs.path, validity: .expired)
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let refused = try runClient(["list"], server: server.address, certs: certs.path, name: "old")
        #expect(refused.status == 5)
        #expect(refused.err.contains("the server refused your certificate: it has expired"), "\(refused.err)")
        try server.waitForLog("TLS handshake failed: certificate expired")
    }

    @Test func theServerWarnsWhenItsCertificateExpiresWithinThirtyDays() throws {
        let directory = try TemporaryDirectory()
        let certs = directory.path + "/certs"
        _ = try CertificateAuthority.initialize(directory: certs, serverValidity: .days(10))
        let server = try ServerProcess(
            arguments: ["--listen", "127.0.0.1:0", "--store", "memory", "--certs", certs], directory: directory)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        try server.waitForLog("warning: the server certificate server.crt expires at ")
        #expect(server.log.contains("in 9 days") || server.log.contains("in 10 days"))

        // Re-issued for longer, then reloaded: no new warning.
        try OperatorCertificates.certs(["server", "--dir", certs])
        server.signal(SIGHUP)
        try server.waitForLog("reloaded certificates")
        #expect(server.log.components(separatedBy: "warning: the server certificate").count == 2)
    }

    @Test func theStoreFolderIsOwnerOnlyAndTheLogNamesAbsolutePaths() throws {
        let directory = try TemporaryDirectory()
        let certificates = try TestCertificates()
        let server = try ServerProcess(
            arguments: ["--listen", "127.0.0.1:0", "--store", "sqlite:\(directory.path)/data/memos.sqlite",
                        "--certs", certificates.path],
            directory: directory)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let attributes = { (path: String) in
            try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        }
        #expect(try attributes(directory.path + "/data") == 0o700)
        #expect(try attributes(directory.path + "/data/memos.sqlite") == 0o600)
        #expect(server.log.contains("serving sqlite:\(directory.path)/data/memos.sqlite"))
        #expect(server.log.contains("loaded certificates from \(certificates.path):"))
    }
}
