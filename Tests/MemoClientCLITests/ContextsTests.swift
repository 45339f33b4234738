import Foundation
import MemoCLI
import MemoClient
import MemoClientCLI
import MemoTestSupport
import Testing

@Suite("Client contexts: ~/.config/memo/config read, chosen and overridden")
struct ContextsTests {
    private let sample = """
        # two places
        current work

        context work
          server memo1.example.com,memo2.example.com:7500
          ca     work/ca.crt
          cert   /etc/memo/client.crt
          key    ~/keys/client.key
        context local
        \tserver 127.0.0.1:7421
        """

    private func parse(_ text: String) throws(UsageError) -> ContextsFile {
        try ContextsFile.parse(text, path: "/home/u/.config/memo/config", home: "/home/u")
    }

    /// The usage error `body` throws, nil when it throws none.
    private func usage(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return (error as? UsageError)?.message ?? "\(error)"
        }
    }

    private func error(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aFileOfContextsReadsWithPathsResolved() throws {
        let file = try parse(sample)
        #expect(file.current == "work")
        #expect(file.contexts.map(\.name) == ["work", "local"])
        let work = try #require(file.context(named: "work"))
        #expect(work.server == "memo1.example.com,memo2.example.com:7500")
        #expect(work.ca == "/home/u/.config/memo/work/ca.crt")
        #expect(work.cert == "/etc/memo/client.crt")
        #expect(work.key == "/home/u/keys/client.key")
        #expect(work.line == 4)
        #expect(file.context(named: "local")?.server == "127.0.0.1:7421")
        #expect(file.context(named: "local")?.ca == nil)
    }

    @Test func eachMistakeIsOneLineNamingTheFileAndLine() {
        let path = "/home/u/.config/memo/config"
        #expect(error("context a\nport 7\n")
            == "\(path) line 2: unknown setting 'port' (the settings are current, context, and in a context server, "
            + "ca, cert and key)")
        #expect(error("# c\nserver x\n") == "\(path) line 2: 'server' before any 'context NAME' line")
        #expect(error("context a\ncontext a\n") == "\(path) line 2: context 'a' is defined twice (first on line 1)")
        #expect(error("context a\n ca x\n ca y\n") == "\(path) line 3: 'ca' is given twice in context 'a'")
        #expect(error("context a\nserver\n") == "\(path) line 2: 'server' needs a value")
        #expect(error("current a\ncurrent b\n") == "\(path) line 2: 'current' is given twice (first on line 1)")
        #expect(error("context my work\n") == "\(path) line 1: a context's name has no spaces: 'my work'")
    }

    @Test func theOptionWinsOverTheVariableWhichWinsOverTheCurrentLine() throws {
        let file = try parse(sample)
        let path = file.path
        func chosen(_ option: String?, _ environment: [String: String] = [:]) throws -> String? {
            try ContextsFile.selected(option: option, environment: environment, file: file, path: path)?.name
        }
        #expect(try chosen(nil) == "work")
        #expect(try chosen(nil, ["MEMO_CONTEXT": "local"]) == "local")
        #expect(try chosen("work", ["MEMO_CONTEXT": "local"]) == "work")
        #expect(usage { _ = try chosen("home") }
            == "no context 'home' (--context) in \(path); known: work, local")
        #expect(usage { _ = try chosen(nil, ["MEMO_CONTEXT": "x"]) }
            == "no context 'x' (MEMO_CONTEXT) in \(path); known: work, local")
        #expect(usage {
            _ = try ContextsFile.selected(option: "a", environment: [:], file: nil, path: "/nowhere/config")
        } == "no context 'a' (--context): /nowhere/config does not exist")
        #expect(try ContextsFile.selected(option: nil, environment: [:], file: nil, path: "/nowhere") == nil)
    }

    @Test func flagsAndVariablesWinOverTheContextsValues() throws {
        let home = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: home.path + "/.config/memo", withIntermediateDirectories: true)
        try sample.write(toFile: home.path + "/.config/memo/config", atomically: true, encoding: .utf8)
        let base = ["HOME": home.path]
        func configuration(_ line: String, _ environment: [String: String] = [:]) throws -> ClientConfiguration? {
            let argv = line.split(separator: " ").map(String.init)
            guard case .run(let configuration, _, _, _, _, _) = try Invocation.parse(
                argv, environment: base.merging(environment) { $1 })
            else { return nil }
            return configuration
        }
        let work = try #require(try configuration("list"))
        #expect(work.server == "memo1.example.com:7420,memo2.example.com:7500")
        #expect(work.caPath == home.path + "/.config/memo/work/ca.crt")
        #expect(work.certificatePath == "/etc/memo/client.crt")
        #expect(work.keyPath == home.path + "/keys/client.key")
        #expect(try configuration("list --context local")?.server == "127.0.0.1:7421")
        #expect(try configuration("list", ["MEMO_CONTEXT": "local"])?.server == "127.0.0.1:7421")
        #expect(try configuration("list", ["MEMO_SERVER": "b.example"])?.server == "b.example:7420")
        #expect(try configuration("list --server c.example", ["MEMO_SERVER": "b.example"])?.server == "c.example:7420")
        let mixed = try #require(try configuration("list --cert mine.crt", ["MEMO_CA": "/ca.crt"]))
        #expect(mixed.caPath == "/ca.crt")
        #expect(mixed.certificatePath == "mine.crt")
        #expect(mixed.keyPath == home.path + "/keys/client.key")
        let folder = try #require(try configuration("list --certs /elsewhere"))
        #expect(folder.caPath == "/elsewhere/ca.crt" && folder.keyPath == "/elsewhere/client.key")
        #expect(try configuration("list", ["MEMO_CERTS": "/env"])?.certificatePath == "/env/client.crt")
        // Without the file nothing changes; with a context named and no file, one line says so.
        let empty = try TemporaryDirectory()
        #expect(usage {
            _ = try Invocation.parse(["--context", "work", "list"], environment: ["XDG_CONFIG_HOME": empty.path])
        } == "no context 'work' (--context): \(empty.path)/memo/config does not exist")
    }
}
