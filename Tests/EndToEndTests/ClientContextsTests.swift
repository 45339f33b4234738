import Foundation
import MemoNet
import MemoTestSupport
import ServerTestSupport
import Testing

@Suite("memo-client --context: a named server and certificates from ~/.config/memo/config", .serialized)
struct ClientContextsTests {
    @Test func aContextNamesTheServerAndCertificatesAndFlagsWinOverIt() throws {
        let server = try TestServer()
        defer { server.stop() }
        let config = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: config.path + "/memo", withIntermediateDirectories: true)
        let certs = server.certificates.path
        try """
            # written by the test
            current nowhere
            context nowhere
              server 127.0.0.1:1
              ca \(certs)/ca.crt
              cert \(certs)/client.crt
              key \(certs)/client.key
            context test
              server \(server.address)
              ca \(certs)/ca.crt
              cert \(certs)/client.crt
              key \(certs)/client.key
            context reader
              server \(server.address)
              ca \(certs)/ca.crt
              cert \(certs)/reader.crt
              key \(certs)/reader.key
            """.write(toFile: config.path + "/memo/config", atomically: true, encoding: .utf8)
        func client(_ arguments: [String], _ environment: [String: String] = [:]) throws
            -> (status: Int32, out: String, err: String)
        {
            let (status, out, err) = try runTool("memo-client", arguments, environment: cleanEnvironment(
                ["XDG_CONFIG_HOME": config.path, "MEMO_EXPIRY_WARNING": "0"].merging(environment) { $1 }))
            return (status, out, err)
        }

        let added = try client(["--context", "test", "add", "from a context"])
        #expect(added.status == 0, "\(added.err)")
        let listed = try client(["list", "-o", "ids"], ["MEMO_CONTEXT": "test"])
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.split(separator: "\n").count == 1)
        // The context's certificate is the reader's: read-only, so the write is refused (exit 5).
        let refused = try client(["--context", "reader", "add", "no"])
        #expect(refused.status == 5, "\(refused.err)")
        // --server and --cert win over the context's.
        let flags = try client(["--context", "nowhere", "--server", server.address.description, "list"])
        #expect(flags.status == 0, "\(flags.err)")
        #expect(try client(["--context", "reader", "--cert", certs + "/client.crt", "--key", certs + "/client.key",
                            "add", "yes"]).status == 0)
        // The current line's context is used when none is named: nothing listens on port 1.
        let current = try client(["list", "--timeout", "0.5"])
        #expect(current.status == 6, "\(current.err)")

        let unknown = try client(["--context", "home", "list"])
        #expect(unknown.status == 2)
        #expect(unknown.err.hasPrefix("memo-client: no context 'home' (--context) in \(config.path)/memo/config; "
            + "known: nowhere, test, reader\n"))

        let contexts = try client(["config", "contexts"], ["MEMO_CONTEXT": "test"])
        #expect(contexts.status == 0)
        #expect(contexts.out == "\tnowhere\t127.0.0.1:1\n*\ttest\t\(server.address)\n\treader\t\(server.address)\n")
        #expect(try client(["config", "contexts", "-o", "ids"]).out == "nowhere\ntest\nreader\n")
        let json = try client(["config", "contexts", "--json"])
        let firstObject = json.out.split(separator: "\n").first.map(String.init)
        #expect(firstObject == "{\"name\":\"nowhere\",\"current\":true,\"server\":\"127.0.0.1:1\","
            + "\"ca\":\"\(certs)/ca.crt\",\"cert\":\"\(certs)/client.crt\",\"key\":\"\(certs)/client.key\"}")
    }

    @Test func aBrokenConfigFileIsOneLineWithItsLineNumber() throws {
        let config = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: config.path + "/memo", withIntermediateDirectories: true)
        try "context a\n  server x\n  colour blue\n".write(
            toFile: config.path + "/memo/config", atomically: true, encoding: .utf8)
        let (status, _, err) = try runTool(
            "memo-client", ["list"], environment: cleanEnvironment(["XDG_CONFIG_HOME": config.path]))
        #expect(status == 2)
        #expect(err.hasPrefix("memo-client: \(config.path)/memo/config line 3: unknown setting 'colour' (the settings "
            + "are current, context, and in a context server, ca, cert and key)\n"))
    }
}
