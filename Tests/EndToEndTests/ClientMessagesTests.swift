import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import MemoTLS
import MemoTestSupport
import ServerTestSupport
import Testing

/// Every documented failure, run through the binaries, says what went wrong in one line in the user's terms.
@Suite("memo-client and memo-server messages: one line each, in the user's terms", .serialized)
struct ClientMessagesTests {
    /// Words that mean a message was passed on from a library rather than written for the user.
    static let foreign = ["Error Domain", "NSCocoaErrorDomain", "error:0", "Swift.", "The operation could not",
                          "OpenSSL error"]

    /// The first part said twice in a row (`invalid argument: invalid argument: ...`), if any.
    static func doubledPart(_ line: String) -> String? {
        let parts = line.components(separatedBy: ": ")
        for index in parts.indices.dropFirst() where parts[index] == parts[index - 1] { return parts[index] }
        return nil
    }

    @Test func everyDocumentedFailureSaysWhatWentWrongInOneLineOfItsOwnWords() throws {
        let server = try TestServer()
        defer { server.stop() }
        let stranger = try TestCertificates()
        let address = server.address.description
        let certs = server.certificates.path
        let data = try TemporaryDirectory()
        let junk = data.path + "/junk.crt"
        try "junk\n".write(toFile: junk, atomically: true, encoding: .utf8)
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let closedAddress = try closed.localAddress().description
        closed.close()
        _ = try runClient(["add", "--id", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "one"], server: address,
                          certs: certs)

        func client(_ arguments: [String], ca: String? = nil, cert: String? = nil, key: String? = nil,
                    stdin: String? = nil) throws -> String {
            let connection = ["--server", address, "--ca", ca ?? certs + "/ca.crt",
                              "--cert", cert ?? certs + "/client.crt", "--key", key ?? certs + "/client.key"]
            let result = try runTool("memo-client", connection + arguments, environment: nil, stdin: stdin)
            #expect(result.status != 0, "\(arguments): succeeded")
            return result.err
        }
        var messages: [String: String] = [:]
        messages["missing certificate files"] = try runTool(
            "memo-client", ["list", "--server", address, "--certs", data.path + "/none"], environment: nil).err
        messages["server's certificate from another CA"] = try client(["list"], ca: stranger.path + "/ca.crt")
        messages["our certificate from another CA"] = try client(
            ["list"], cert: stranger.path + "/client.crt", key: stranger.path + "/client.key")
        messages["a key for another certificate"] = try client(["list"], key: stranger.path + "/client.key")
        messages["a certificate that is not PEM"] = try client(["list"], cert: junk)
        messages["unknown id"] = try client(["show", "ffffffff"])
        messages["stale revision"] = try client(["edit", "0f1e2d3c", "--if-revision", "9", "x"])
        messages["id reused"] = try client(["add", "--id", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "two"])
        messages["bad UTF-8 on stdin"] = try shell("printf '\\377' | memo-client add -", clientEnvironment(server)).err
        messages["bad UTF-8 argument"] = try shell("memo-client add \"$(printf '\\377')\"", clientEnvironment(server)).err
        messages["oversized argument"] = try client(["add", String(repeating: "x", count: 70_000)])
        messages["oversized stdin"] = try client(["add", "-"], stdin: String(repeating: "x", count: 70_000))
        messages["empty memo"] = try client(["add", "-"], stdin: "")
        let badLines = [
            "{\"id\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"content\":\"x\",\"insertDate\":"
                + "\"2026-12-01T00:00:00Z\",\"updateDate\":\"2025-12-01T00:00:00Z\"}",
            "not json", "{\"id\":5}", "[1]", "{\"id\":\"x\",\"content\":\"c\",\"insertDate\":\"2026-12-01T00:00:00Z\"}",
            "{\"id\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"content\":\"c\",\"insertDate\":\"yesterday\"}",
        ]
        messages["bad import lines"] = try client(["import", "-"], stdin: badLines.joined(separator: "\n") + "\n")
        messages["import of a missing file"] = try client(["import", data.path + "/none.jsonl"])
        messages["import of a folder"] = try client(["import", data.path])
        messages["unreachable server"] = try runClient(["list", "--timeout", "0.5"], server: closedAddress,
                                                       certs: certs).err
        messages["bad --server"] = try runClient(["list"], server: "a:b:c", certs: certs).err
        messages["unknown command"] = try client(["frobnicate"])
        messages["unknown option"] = try client(["list", "--frob"])
        messages["watch --since ahead"] = try client(["watch", "--since", "99"])
        messages["output to a full disk"] = try shell("memo-client export > /dev/full", clientEnvironment(server)).err

        func serverTool(_ arguments: [String]) throws -> String {
            let result = try runTool("memo-server", arguments, environment: nil)
            #expect(result.status != 0, "\(arguments): succeeded")
            return result.err
        }
        let ca = data.path + "/ca"
        #expect(try runTool("memo-server", ["certs", "init", "--dir", ca], environment: nil).status == 0)
        messages["certs init twice"] = try serverTool(["certs", "init", "--dir", ca])
        #expect(try runTool("memo-server", ["certs", "client", "bob", "--dir", ca], environment: nil).status == 0)
        messages["certs client twice"] = try serverTool(["certs", "client", "bob", "--dir", ca])
        messages["--threads 0"] = try serverTool(["serve", "--threads", "0"])
        messages["store folder that cannot be made"] = try serverTool([
            "serve", "--store", "sqlite:/proc/none/memos.sqlite", "--certs", ca, "--listen", "127.0.0.1:0"])
        messages["unresolvable --listen"] = try serverTool([
            "serve", "--store", "memory", "--certs", ca, "--listen", "no-such-host.invalid:7420"])

        for (failure, text) in messages.sorted(by: { $0.key < $1.key }) {
            let lines = text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("Try '") }
            #expect(!lines.isEmpty, "\(failure): no message")
            if failure != "bad import lines" { #expect(lines.count == 1, "\(failure): \(lines)") }
            for line in lines {
                for word in Self.foreign { #expect(!line.contains(word), "\(failure): \(line)") }
                #expect(Self.doubledPart(line) == nil, "\(failure): \(line)")
                #expect(line.hasPrefix("memo-client: ") || line.hasPrefix("memo-server: "), "\(failure): \(line)")
            }
        }

        // The two unknown-CA cases are told apart, with the file to look at.
        #expect(messages["server's certificate from another CA"]!.contains(
            "the server's certificate is not signed by your CA (\(stranger.path)/ca.crt)"))
        #expect(messages["our certificate from another CA"]!.contains(
            "the server refused your certificate: it is not signed by a CA the server trusts "
                + "(\(stranger.path)/client.crt)"))
        #expect(messages["a key for another certificate"]!.contains("the key does not belong to this certificate"))
        #expect(messages["a certificate that is not PEM"]!.contains("not a PEM file"))
        // Import errors in line order, dates as dates (no raw microseconds).
        let importLines = messages["bad import lines"]!.split(separator: "\n")
        #expect(importLines.count == badLines.count)
        #expect(importLines.map { $0.split(separator: ":")[1] } == badLines.indices.map { " line \($0 + 1)" })
        #expect(importLines[0] == "memo-client: line 1: invalid argument: updateDate \"2025-12-01T00:00:00Z\" is "
            + "before insertDate \"2026-12-01T00:00:00Z\"")
        #expect(messages["certs init twice"]!.contains("--force"))
        #expect(messages["certs client twice"]!.contains("--force"))
        #expect(messages["store folder that cannot be made"]!.contains("No such file or directory"))
        // --threads: the error and the help say the same range.
        #expect(messages["--threads 0"]!.contains("from 1 to 256"))
        let help = try runTool("memo-server", ["serve", "--help"], environment: nil).out
        #expect(help.contains("given: 1 to 256"))
    }

    /// A certificate file that failed to load only in a handshake (memo-client defers loading when a TLS session
    /// is saved) reaches the command as a refused connection; it is said as a load at start is, with exit 5.
    @Test func aFileThatFailsToLoadInAHandshakeIsSaidAsWhenItFailsAtStart() {
        let loading = TLSError(
            kind: .openSSL, operation: "loading private key /certs/client.key",
            reasons: ["not a key or certificate OpenSSL can read"])
        let refused = ClientError.tlsRefused(server: "127.0.0.1:7420", loading)
        #expect(Array(ExitCode.message(for: refused).utf8) == Array(ExitCode.message(for: loading).utf8))
        #expect(ExitCode.message(for: refused).hasPrefix("cannot use the certificates: loading private key"))
        #expect(ExitCode(refused) == ExitCode(loading))
        #expect(ExitCode(refused) == .refused)
    }

    @Test func aServerMessageWrappedAgainByTheClientIsSaidOnce() {
        let wrapped = MemoError.invalidArgument("invalid argument: the update date is before the insert date")
        #expect(ExitCode.message(for: wrapped) == "invalid argument: the update date is before the insert date")
        // The message itself is kept whatever it says.
        #expect(ExitCode.message(for: MemoError.invalidArgument("x: x")) == "invalid argument: x: x")
    }

    @Test func theServersVerdictOnOurCertificateIsSaidAsItsRefusalWithTheFileAndTheFix() {
        func refused(_ kind: TLSError.Kind) -> String {
            let tls = TLSError(kind: kind, operation: "TLS handshake (client)", detail: TLSError.peerAlertDetail,
                               reasons: ["peer sent alert"])
            return ExitCode.message(for: ClientError.tlsRefused(server: "h:1", tls),
                                    certificates: (ca: "c/ca.crt", own: "c/bob.crt"))
        }
        #expect(refused(.certificateRevoked) == "TLS with h:1 failed: the server refused your certificate: it has been "
            + "revoked (c/bob.crt); ask the server's operator for a new one")
        #expect(refused(.certificateExpired) == "TLS with h:1 failed: the server refused your certificate: it has "
            + "expired (c/bob.crt); ask the server's operator for a new one")
        #expect(refused(.certificateRejected) == "TLS with h:1 failed: the server refused your certificate: "
            + "certificate rejected (c/bob.crt)")
    }

    @Test func revokingOneCertificateSaysCertificateInTheSingular() throws {
        try withTemporaryDirectory { directory in
            #expect(try runTool("memo-server", ["certs", "init", "--dir", directory], environment: nil).status == 0)
            #expect(try runTool("memo-server", ["certs", "client", "bob", "--dir", directory], environment: nil)
                .status == 0)
            let revoked = try runTool("memo-server", ["certs", "revoke", "bob", "--dir", directory], environment: nil)
            #expect(revoked.status == 0)
            #expect(revoked.out.contains("ca.crl lists 1 certificate; "), "\(revoked.out)")
        }
    }
}
