import Foundation
import MemoNet
import MemoPKI
import MemoTLS
import MemoTestSupport
import ServerTestSupport
import Testing

@Suite("memo-client whoami and the certificate-expiry warning", .serialized)
struct ClientWhoamiTests {
    @Test func whoamiJSONNamesTheCertificateAndWarnsWithin30DaysOfExpiry() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        _ = try CertificateAuthority.issueClient(name: "soon", directory: certs, readOnly: true, validity: .days(5))
        let cache = try TemporaryDirectory()
        let environment = cleanEnvironment(["XDG_CACHE_HOME": cache.path])
        let (status, out, err) = try runTool(
            "memo-client", ["whoami", "--json", "--certs", certs, "--cert", certs + "/soon.crt"],
            environment: environment)
        #expect(status == 0, "\(err)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        let info = try CertificateInfo(path: certs + "/soon.crt")
        #expect(object["name"] as? String == "soon")
        #expect(object["role"] as? String == "read-only")
        #expect(object["serial"] as? String == info.serial)
        #expect(object["issuer"] as? String == (try CertificateInfo(path: certs + "/ca.crt")).commonName)
        #expect(object["notAfter"] as? String == UTCTime.format(info.notAfter))
        #expect([4, 5].contains(object["daysLeft"] as? Int ?? -1), "\(object)")
        #expect(object["certificate"] as? String == certs + "/soon.crt")
        let warning = try #require(object["warning"] as? String)
        #expect(warning.hasPrefix("warning: the client certificate \(certs)/soon.crt (soon) expires at "))
        #expect(err.split(separator: "\n").map(String.init) == ["memo-client: " + warning])
        #expect(out.split(separator: "\n").count == 1)

        // The one-day certificate of the test CA is not "soon" in the same way: a 400-day one gets no warning.
        _ = try CertificateAuthority.issueClient(name: "later", directory: certs, validity: .days(400))
        let (laterStatus, laterOut, laterErr) = try runTool(
            "memo-client", ["whoami", "--certs", certs, "--cert", certs + "/later.crt"], environment: environment)
        #expect(laterStatus == 0 && laterErr.isEmpty, "\(laterErr)")
        let rows = laterOut.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 1).map(String.init) }
        #expect(rows.map { $0[0] } == [
            "name", "role", "serial", "issuer", "notBefore", "notAfter", "daysLeft", "certificate",
        ])
        #expect(rows.first { $0[0] == "role" }?.last == "read-write")

        // No certificate there: exit 5 with one line naming the file, as every command says it.
        let (missingStatus, missingOut, missingErr) = try runTool(
            "memo-client", ["whoami", "--certs", certs, "--cert", certs + "/nobody.crt"], environment: environment)
        #expect(missingStatus == 5 && missingOut.isEmpty)
        #expect(missingErr.hasPrefix("memo-client: ") && missingErr.contains(certs + "/nobody.crt"), "\(missingErr)")
        #expect(missingErr.split(separator: "\n").count == 1, "\(missingErr)")
    }

    @Test func everyCommandWarnsOfAnExpiringCertificateOnceADay() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        _ = try CertificateAuthority.issueClient(name: "soon", directory: certs, validity: .days(3))
        let cache = try TemporaryDirectory()
        let environment = cleanEnvironment(["XDG_CACHE_HOME": cache.path, "MEMO_EXPIRY_WARNING": "1"])
        let arguments = ["--server", server.address.description, "--certs", certs, "--cert", certs + "/soon.crt",
                         "--key", certs + "/soon.key"]
        let first = try runTool("memo-client", arguments + ["add", "첫 메모"], environment: environment)
        #expect(first.0 == 0, "\(first.2)")
        let lines = first.2.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("memo-client: warning: the client certificate "), "\(first.2)")
        #expect(lines.first?.contains("in 2 days") == true || lines.first?.contains("in 3 days") == true)
        // The same day: no warning again, and the command's output is as it always is.
        let second = try runTool("memo-client", arguments + ["list"], environment: environment)
        #expect(second.0 == 0 && second.2.isEmpty, "\(second.2)")
        #expect(second.1.contains("첫 메모"))
        let remembered = try String(contentsOfFile: cache.path + "/memo/certificate-warnings", encoding: .utf8)
        let serial = try CertificateInfo(path: certs + "/soon.crt").serial
        #expect(remembered == serial + "\t" + String(UTCTime.format(UTCTime.now()).prefix(10)) + "\n")
        // Another day (the file says yesterday): the warning comes back.
        try Data((serial + "\t2000-01-01\n").utf8)
            .write(to: URL(fileURLWithPath: cache.path + "/memo/certificate-warnings"))
        let third = try runTool("memo-client", arguments + ["list"], environment: environment)
        #expect(third.2.hasPrefix("memo-client: warning: the client certificate "), "\(third.2)")
        // MEMO_EXPIRY_WARNING=0 silences it (scripts whose stderr must stay clean).
        try FileManager.default.removeItem(atPath: cache.path + "/memo/certificate-warnings")
        var quiet = environment
        quiet["MEMO_EXPIRY_WARNING"] = "0"
        let fourth = try runTool("memo-client", arguments + ["list"], environment: quiet)
        #expect(fourth.0 == 0 && fourth.2.isEmpty, "\(fourth.2)")
    }
}
