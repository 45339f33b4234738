import Foundation
import Glibc
import MemoTestSupport
import ServerTestSupport
import Testing

/// memo-client's TLS session cache through the built binaries: the file, resumption, MEMO_TLS_RESUME=0, a
/// corrupt file, and a revoked certificate whose session is still cached (README.md, "TLS session resumption").
@Suite("TLS session resumption through the binaries", .serialized)
struct TLSResumptionEndToEndTests {
    /// Runs memo-client as `name` with its cache in `cache` (plus `environment`).
    private func client(
        _ arguments: [String], server: ServerProcess, certs: OperatorCertificates, name: String = "alice",
        cache: String, environment: [String: String] = [:]
    ) throws -> (status: Int32, out: String, err: String) {
        let connection = ["--server", server.address, "--ca", certs.path + "/ca.crt", "--cert",
                          certs.path + "/\(name).crt", "--key", certs.path + "/\(name).key"]
        let merged = ProcessInfo.processInfo.environment.merging(
            ["XDG_CACHE_HOME": cache, "MEMO_EXPIRY_WARNING": "0"].merging(environment) { $1 }) { $1 }
        return try runTool("memo-client", connection + arguments, environment: merged)
    }

    /// The session files in `cache`'s memo folder.
    private func sessionFiles(_ cache: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cache + "/memo")) ?? []
        return names.filter { $0.hasPrefix("tls-session-") }.map { cache + "/memo/" + $0 }
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    private func resumedOpens(_ server: ServerProcess) -> Int {
        server.log.split(separator: "\n").filter { $0.contains("open conn=") && $0.contains("resumed=yes") }.count
    }

    /// The first command saves the server's ticket in a 0600 file in a 0700 folder; the next command resumes
    /// (the server logs `resumed=yes`); with MEMO_TLS_RESUME=0 nothing is saved or offered.
    @Test func aSecondCommandResumesFromAPrivateSessionFileAndMemoTLSResumeZeroTurnsItOff() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "first"], server: server, certs: certs, cache: cache).status == 0)
        let files = sessionFiles(cache)
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        #expect(mode(file) == 0o600)
        #expect(mode(cache + "/memo") == 0o700)
        #expect(resumedOpens(server) == 0)

        let listed = try client(["list"], server: server, certs: certs, cache: cache)
        #expect(listed.status == 0 && listed.out.contains("first"), "\(listed.err)")
        #expect(pollUntil(seconds: 10) { resumedOpens(server) == 1 })

        let off = certs.directory.path + "/cache-off"
        let plain = try client(["list"], server: server, certs: certs, cache: off, environment: ["MEMO_TLS_RESUME": "0"])
        #expect(plain.status == 0, "\(plain.err)")
        #expect(sessionFiles(off).isEmpty)
        let wrong = try client(["list"], server: server, certs: certs, cache: off, environment: ["MEMO_TLS_RESUME": "2"])
        #expect(wrong.status == 2)
        #expect(wrong.err.contains("MEMO_TLS_RESUME takes 0 (off) or 1 (on), not '2'"), "\(wrong.err)")
    }

    /// `memo-server --tls-tickets 0` sends no ticket: the client saves nothing and nothing resumes; a value out of
    /// range is a usage error.
    @Test func aServerWithTLSTicketsZeroSendsNoTicketAndNothingResumes() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try ServerProcess(
            arguments: ["--listen", "127.0.0.1:0", "--store", "memory", "--certs", certs.path, "--tls-tickets", "0"],
            directory: certs.directory)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "first"], server: server, certs: certs, cache: cache).status == 0)
        #expect(try client(["list"], server: server, certs: certs, cache: cache).status == 0)
        #expect(sessionFiles(cache).isEmpty)
        #expect(resumedOpens(server) == 0)
        let wrong = try runTool("memo-server", ["serve", "--certs", certs.path, "--tls-tickets", "86401"])
        #expect(wrong.0 == 2)
        #expect(wrong.2.contains("--tls-tickets"), "\(wrong.2)")
    }

    /// A session file that is not a session is ignored: the command makes a full handshake, succeeds without a
    /// word on stderr, and the file is replaced by the new session.
    @Test func aCorruptSessionFileMeansAFullHandshakeAndNoError() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "first"], server: server, certs: certs, cache: cache).status == 0)
        let file = try #require(sessionFiles(cache).first)
        let garbage = Data("not a TLS session".utf8)
        try garbage.write(to: URL(fileURLWithPath: file))
        let listed = try client(["list"], server: server, certs: certs, cache: cache)
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.err.isEmpty, "\(listed.err)")
        #expect(resumedOpens(server) == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) != garbage)
    }

    /// alice's session is in her cache when her certificate is revoked and the server reloads: her next command
    /// offers it, the server does not resume it (the certificate it carries is on the list it has now), and the
    /// full handshake refuses her as revoked: exit 5, as without a session. bob still resumes.
    @Test func aRevokedClientWithACachedSessionIsRefusedAfterSighupAndExitsFive() throws {
        let certs = try OperatorCertificates(clients: ["alice", "bob"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "before"], server: server, certs: certs, cache: cache).status == 0)
        #expect(try client(["list"], server: server, certs: certs, name: "bob", cache: cache).status == 0)
        #expect(sessionFiles(cache).count == 2)

        try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        server.signal(SIGHUP)
        try server.waitForLog("reloaded certificates from \(certs.path)")

        let refused = try client(["list"], server: server, certs: certs, cache: cache)
        #expect(refused.status == 5, "\(refused.out) \(refused.err)")
        #expect(refused.err.contains("the server refused your certificate: it has been revoked"), "\(refused.err)")
        try server.waitForLog("TLS handshake failed: certificate revoked")
        let before = resumedOpens(server)
        #expect(try client(["list"], server: server, certs: certs, name: "bob", cache: cache).status == 0)
        #expect(pollUntil(seconds: 10) { resumedOpens(server) == before + 1 })
    }

    /// A saved session does not excuse a key file that cannot be opened (here a folder in its place): the command
    /// fails at start with the exit code and message it gives without a session, and makes no connection. With
    /// the key back and the session file removed, the full handshake presents the certificate and succeeds.
    @Test func aKeyThatCannotBeOpenedFailsAtStartThoughASessionIsSaved() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "first"], server: server, certs: certs, cache: cache).status == 0)
        let file = try #require(sessionFiles(cache).first)
        let key = certs.path + "/alice.key"
        try FileManager.default.moveItem(atPath: key, toPath: key + ".saved")
        try FileManager.default.createDirectory(atPath: key, withIntermediateDirectories: false)
        // The add's `open` line (the log is written by a thread of its own: it may come just after the answer).
        let opens = 1
        let openLines = { server.log.split(separator: "\n").filter { $0.contains("open conn=") }.count }
        #expect(pollUntil(seconds: 10) { openLines() == opens })

        let refused = try client(["list"], server: server, certs: certs, cache: cache)
        let withoutSession = try client(["list"], server: server, certs: certs, cache: cache + "-none")
        #expect(refused.status == 5, "\(refused.err)")
        #expect(refused.err.contains("cannot use the certificates: loading private key \(key)"), "\(refused.err)")
        #expect(Array(refused.err.utf8) == Array(withoutSession.err.utf8))
        #expect(refused.status == withoutSession.status)
        #expect(openLines() == opens)

        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.moveItem(atPath: key + ".saved", toPath: key)
        try FileManager.default.removeItem(atPath: file)
        let listed = try client(["list"], server: server, certs: certs, cache: cache)
        #expect(listed.status == 0 && listed.out.contains("first"), "\(listed.err)")
        #expect(resumedOpens(server) == 0)
    }

    /// A key file replaced since the session was saved (here by one that does not parse) is not excused by the
    /// session: alice's certificate is also revoked, so the server would not take her ticket (as a restarted server
    /// would not) and the handshake would be full. The command says what it says without a session (exit 5,
    /// "cannot use the certificates: loading private key ..."), not a bare TLS failure.
    @Test func aKeyThatNoLongerParsesIsReportedAsAtStartWhenTheSessionIsNotResumed() throws {
        let certs = try OperatorCertificates(clients: ["alice"])
        let server = try certs.serve()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let cache = certs.directory.path + "/cache"
        #expect(try client(["add", "first"], server: server, certs: certs, cache: cache).status == 0)
        #expect(sessionFiles(cache).count == 1)
        try OperatorCertificates.certs(["revoke", "alice", "--dir", certs.path])
        server.signal(SIGHUP)
        try server.waitForLog("reloaded certificates from \(certs.path)")
        let key = certs.path + "/alice.key"
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: key))

        let refused = try client(["list"], server: server, certs: certs, cache: cache)
        let withoutSession = try client(["list"], server: server, certs: certs, cache: cache + "-none")
        #expect(refused.status == 5, "\(refused.err)")
        #expect(refused.err.contains("cannot use the certificates: loading private key \(key)"), "\(refused.err)")
        #expect(Array(refused.err.utf8) == Array(withoutSession.err.utf8))
    }
}
