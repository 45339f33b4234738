import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// The environment of a test's child process: the runner's, less every MEMO_ variable and the config folders.
func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter {
        !$0.key.hasPrefix("MEMO_") && $0.key != "XDG_CONFIG_HOME" && $0.key != "XDG_CACHE_HOME"
    }
    environment.merge(extra) { $1 }
    return environment
}

@Suite("memo-client and memo-server: options, addresses, environment, help and completion", .serialized)
struct ClientOptionsTests {
    @Test func anAddressWithoutAPortGets7420AndAMalformedOneIsRefusedInWords() throws {
        #expect(try HostPort(parsing: "memo.example", defaultPort: 7420).description == "memo.example:7420")
        #expect(try HostPort(parsing: "10.0.0.1:80", defaultPort: 7420).description == "10.0.0.1:80")
        #expect(try HostPort(parsing: "[::1]", defaultPort: 7420).description == "[::1]:7420")
        #expect(try HostPort(parsing: "[::1]:7000", defaultPort: 7420) == HostPort(host: "::1", port: 7000))
        #expect(try HostPort(parsing: "::1", defaultPort: 7420).description == "[::1]:7420")
        for bad in ["", ":7420", "host:", "host:x", "host:65536", "[::1", "[::1]x", "[host]:1", "a:b:c", "a b:1"] {
            #expect(throws: HostPort.SyntaxError.self, "\(bad)") { try HostPort(parsing: bad, defaultPort: 7420) }
        }
        // Through the binaries: a usage error (2) that names the option, never a type name.
        for bad in ["host:x", "[::1", "a:b:c:99999x", ":1"] {
            let client = try runTool("memo-client", ["--server", bad, "list"], environment: cleanEnvironment())
            #expect(client.status == 2, "\(bad)")
            #expect(client.err.hasPrefix("memo-client: --server: '\(bad)' is not an address: "), "\(client.err)")
            #expect(!client.err.contains("SocketAddress"))
            let server = try runTool("memo-server", ["serve", "--listen", bad], environment: cleanEnvironment())
            #expect(server.status == 2, "\(bad)")
            #expect(server.err.hasPrefix("memo-server: --listen: '\(bad)' is not an address: "), "\(server.err)")
        }
        // No port: 7420, in the error that names where it tried (whatever listens there, if anything).
        let certs = try TestCertificates()
        for (given, used) in [("127.0.0.1", "127.0.0.1:7420"), ("[::1]", "[::1]:7420"), ("[::1]:7420", "[::1]:7420")] {
            let result = try runClient(["list", "--timeout", "0.3"], server: given, certs: certs.path)
            #expect(result.status == 5 || result.status == 6)
            #expect(result.err.contains(used), "\(given): \(result.err)")
        }
    }

    @Test func unknownOptionsVersionsAndEachCommandsHelp() throws {
        let unknown = try runTool("memo-client", ["-x", "json", "list"], environment: cleanEnvironment())
        #expect(unknown.status == 2)
        #expect(unknown.err.hasPrefix("memo-client: unknown option -x\n"))
        let late = try runTool("memo-client", ["list", "--shape", "json"], environment: cleanEnvironment())
        #expect(late.status == 2)
        #expect(late.err.hasPrefix("memo-client: unknown option --shape\n"))

        for tool in ["memo-client", "memo-server", "memo-bench", "memo-torture"] {
            let version = try runTool(tool, ["--version"], environment: cleanEnvironment())
            #expect(version.status == 0)
            let lines = version.out.split(separator: "\n")
            let linksSQLite = tool != "memo-client"
            #expect(lines.count == (linksSQLite ? 4 : 3), "\(version.out)")
            #expect(lines.first?.hasPrefix("\(tool) ") == true)
            #expect(lines.dropFirst().first == "protocol \(WireProtocol.version)")
            #expect(lines.contains { $0.hasPrefix("OpenSSL 3") })
            #expect(lines.contains { $0.hasPrefix("SQLite 3") } == linksSQLite, "\(version.out)")
        }
        // The client keeps no database: its binary does not ask the dynamic linker for SQLite.
        let client = try Data(contentsOf: URL(fileURLWithPath: builtExecutable("memo-client")))
        #expect(client.range(of: Data("libsqlite3.so".utf8)) == nil)

        let whole = try runTool("memo-client", ["--help"], environment: cleanEnvironment()).out
        #expect(whole.contains("Commands:") && whole.contains("-- ends the options"))
        for (arguments, usage) in [(["add", "--help"], "usage: memo-client add"),
                                   (["rm", "-h"], "usage: memo-client rm"),
                                   (["--server", "x", "delete", "--help"], "usage: memo-client rm"),
                                   (["help", "watch"], "usage: memo-client watch"),
                                   (["import", "--help"], "usage: memo-client import")] {
            let help = try runTool("memo-client", arguments, environment: cleanEnvironment())
            #expect(help.status == 0, "\(arguments)")
            #expect(help.out.hasPrefix(usage), "\(arguments): \(help.out.prefix(80))")
            #expect(!help.out.contains("Commands:"), "\(arguments)")
        }
        let noSuch = try runTool("memo-client", ["bogus", "--help"], environment: cleanEnvironment())
        #expect(noSuch.status == 2)
        // A typo of a command or option, in each program: exit 2 and the word it was probably meant to be.
        for (tool, arguments, near) in [("memo-client", ["lsit"], "list"), ("memo-client", ["list", "--jsn"], "--json"),
                                        ("memo-server", ["serve", "--thraeds", "2"], "--threads"),
                                        ("memo-bench", ["fanuot"], "fanout"), ("memo-torture", ["crahs"], "crash")] {
            let typo = try runTool(tool, arguments, environment: cleanEnvironment())
            #expect(typo.status == 2, "\(tool) \(arguments)")
            #expect(typo.err.hasPrefix("\(tool): ") && typo.err.contains("; did you mean '\(near)'?\n"),
                    "\(typo.err)")
        }
        // Text after -- is text, even when it looks like an option.
        let server = try TestServer()
        defer { server.stop() }
        let dashed = try runClient(["add", "--", "-5", "degrees", "--help"], server: server.address.description,
                                   certs: server.certificates.path)
        #expect(dashed.status == 0, "\(dashed.err)")
        #expect(dashed.out.hasSuffix("\t-5 degrees --help\n"))
    }

    @Test func everyConnectionOptionHasAnEnvironmentVariableAndCacertIsCa() throws {
        let server = try TestServer()
        defer { server.stop() }
        let certs = server.certificates.path
        let address = server.address.description
        _ = try runClient(["add", "one"], server: address, certs: certs)
        let environment = cleanEnvironment([
            "MEMO_SERVER": address, "MEMO_CA": certs + "/ca.crt", "MEMO_CERT": certs + "/client.crt",
            "MEMO_KEY": certs + "/client.key",
        ])
        let listed = try runTool("memo-client", ["list"], environment: environment)
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.hasSuffix("\tone\n"))
        // The read-only certificate through MEMO_CERT and MEMO_KEY: refused to write.
        var reader = environment
        reader["MEMO_CERT"] = certs + "/reader.crt"
        reader["MEMO_KEY"] = certs + "/reader.key"
        #expect(try runTool("memo-client", ["add", "x"], environment: reader).status == 5)

        let cacert = try runTool("memo-client", [
            "list", "--server", address, "--cacert", certs + "/ca.crt", "--cert", certs + "/client.crt",
            "--key", certs + "/client.key"], environment: cleanEnvironment())
        #expect(cacert.status == 0, "\(cacert.err)")

        let silent = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        defer { silent.close() }
        var slow = environment
        slow["MEMO_SERVER"] = try silent.localAddress().description
        slow["MEMO_TIMEOUT"] = "0.5"
        let timedOut = try runTool("memo-client", ["list"], environment: slow)
        #expect(timedOut.status == 6)
        #expect(timedOut.err.hasSuffix("within 0.5 s\n"), "\(timedOut.err)")
        slow["MEMO_TIMEOUT"] = "soon"
        #expect(try runTool("memo-client", ["list"], environment: slow).status == 2)
    }

    @Test func theCertificateFolderIsCertsHereElseTheUsersConfigAndAMissingFileSaysWhich() throws {
        let server = try TestServer()
        defer { server.stop() }
        let home = try TemporaryDirectory()
        let elsewhere = try TemporaryDirectory()
        let address = server.address.description
        func copyCertificates(to folder: String) throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for name in ["ca.crt", "client.crt", "client.key"] {
                try? FileManager.default.removeItem(atPath: folder + "/" + name)
                try FileManager.default.copyItem(atPath: server.certificates.path + "/" + name,
                                                 toPath: folder + "/" + name)
            }
        }
        // Nothing here, nothing configured: ~/.config/memo/certs, named in the error.
        var environment = cleanEnvironment(["HOME": home.path, "MEMO_SERVER": address])
        let missing = try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path)
        #expect(missing.status == 5)
        #expect(missing.err.contains("certificate folder \(home.path)/.config/memo/certs (the default"),
                "\(missing.err)")
        // XDG_CONFIG_HOME moves it.
        environment["XDG_CONFIG_HOME"] = home.path + "/config"
        let xdg = try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path)
        #expect(xdg.err.contains("certificate folder \(home.path)/config/memo/certs"), "\(xdg.err)")
        try copyCertificates(to: home.path + "/config/memo/certs")
        let configured = try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path)
        #expect(configured.status == 0, "\(configured.err)")
        // ./certs wins when it exists; MEMO_CERTS wins over both, and is named when it is wrong.
        try FileManager.default.createDirectory(atPath: elsewhere.path + "/certs", withIntermediateDirectories: true)
        let empty = try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path)
        #expect(empty.status == 5)
        #expect(empty.err.contains("./certs (found in the current directory)"), "\(empty.err)")
        environment["MEMO_CERTS"] = home.path + "/config/memo/certs"
        #expect(try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path).status == 0)
        environment["MEMO_CERTS"] = "/nonexistent"
        let wrong = try runTool("memo-client", ["list"], environment: environment, directory: elsewhere.path)
        #expect(wrong.err.contains("certificate folder /nonexistent (MEMO_CERTS)"), "\(wrong.err)")
    }

    @Test func completionScriptsOfferCommandsOptionsAndCachedIDsInBashAndLoadInZsh() throws {
        let cache = try TemporaryDirectory()
        let memos = [
            Memo(id: UUID(uuidString: "ab000000-0000-4000-8000-000000000001")!, content: "a", insertMicros: 1,
                 updateMicros: 1, revision: 1),
            Memo(id: UUID(uuidString: "ab110000-0000-4000-8000-000000000002")!, content: "b", insertMicros: 2,
                 updateMicros: 2, revision: 2),
            Memo(id: UUID(uuidString: "cd000000-0000-4000-8000-000000000003")!, content: "c", insertMicros: 3,
                 updateMicros: 3, revision: 3),
        ]
        try MirrorCache.save(revision: 3, memos: memos, to: MirrorCache.defaultPath(
            server: "127.0.0.1:7420", environment: ["XDG_CACHE_HOME": cache.path]))
        let binary = builtExecutable("memo-client")
        let script = """
            source <("\(binary)" completion bash) || exit 9
            complete -p memo-client || exit 8
            ask() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _memo_client; echo "${COMPREPLY[*]}"; }
            ask "\(binary)" wa
            ask "\(binary)" --ser
            ask "\(binary)" show ab
            ask "\(binary)" --timeout 3 rm c
            ask "\(binary)" edit ab1
            ask "\(binary)" edit ab110000-0000-4000-8000-000000000002 te
            ask "\(binary)" completion z
            """
        let result = try runTool("/usr/bin/bash", ["-c", script],
                                 environment: cleanEnvironment(["XDG_CACHE_HOME": cache.path]))
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.split(separator: "\n", omittingEmptySubsequences: false).dropFirst() == [
            "watch", "--server",
            "ab000000-0000-4000-8000-000000000001 ab110000-0000-4000-8000-000000000002",
            "cd000000-0000-4000-8000-000000000003", "ab110000-0000-4000-8000-000000000002", "", "zsh", "",
        ], "\(result.out)")
        // zsh loads the same function through bashcompinit (compinit included) and registers it for memo-client.
        let home = try TemporaryDirectory()
        let zsh = try runTool("/usr/bin/zsh", ["-f", "-c", """
            source <("\(binary)" completion zsh) || exit 9
            print -r -- ${_comps[memo-client]}
            """], environment: cleanEnvironment(["HOME": home.path]))
        #expect(zsh.status == 0, "\(zsh.err)")
        #expect(zsh.out == "_bash_complete -F _memo_client\n", "\(zsh.out) \(zsh.err)")
        #expect(try runTool("memo-client", ["completion", "tcsh"], environment: cleanEnvironment()).status == 2)
    }
}
