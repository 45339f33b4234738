import Foundation
import MemoCLI
import MemoClient
import MemoClientCLI
import MemoTestSupport
import Testing

/// The four programs' command tables (MemoCLI), and what is made from them: the parser's checks, the help, the
/// completion scripts, and README's reference and environment variables, which must agree with them.
@Suite("Command tables: parser, help, completion and README agree")
struct CommandTableTests {
    static let tables: [CommandTable] = [
        ClientCommandTable.table, ServerCommandTable.table, BenchCommandTable.table, TortureCommandTable.table,
    ]

    /// README.md of this checkout.
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    static let sourcesFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    private func usageError(_ table: CommandTable, _ line: String) -> String? {
        do {
            _ = try table.parse(line.split(separator: " ").map(String.init))
            return nil
        } catch {
            return error.message
        }
    }

    @Test func everyOptionAndCommandIsInTheHelpAndInEachCompletionScript() throws {
        for table in Self.tables {
            let help = try #require(table.helpText(for: nil))
            let bash = table.completionScript(shell: "bash")
            let zsh = table.completionScript(shell: "zsh")
            let fish = table.completionScript(shell: "fish")
            for option in table.activeOptions {
                for spelling in option.spellings {
                    #expect(help.contains(spelling), "\(table.program) --help lacks \(spelling)")
                    #expect(Self.containsWord(bash, spelling), "\(table.program) bash completion lacks \(spelling)")
                    #expect(Self.containsWord(zsh, spelling), "\(table.program) zsh completion lacks \(spelling)")
                    let fishFlag = spelling.hasPrefix("--")
                        ? "-l \(spelling.dropFirst(2))" : "-s \(spelling.dropFirst())"
                    #expect(fish.contains(fishFlag + " "), "\(table.program) fish completion lacks \(spelling)")
                }
                // A command's own help names every option of that command.
                if case .only(let commands) = option.scope {
                    for command in commands where !command.isEmpty {
                        let page = try #require(table.helpText(for: command), "\(table.program) \(command)")
                        #expect(page.contains(option.name), "\(table.program) \(command) --help lacks \(option.name)")
                    }
                }
                if let variable = option.environment {
                    #expect(help.contains(variable), "\(table.program) --help lacks \(variable)")
                }
            }
            for command in table.visibleCommands {
                #expect(help.contains("  \(command.name)"), "\(table.program) --help lacks \(command.name)")
                for word in [command.words.last!] + command.aliases {
                    #expect(bash.contains(word), "\(table.program) bash completion lacks \(word)")
                    #expect(fish.contains("-a \(word)"), "\(table.program) fish completion lacks \(word)")
                }
                let page = try #require(table.helpText(for: command.name))
                #expect(page.hasPrefix("usage: \(table.program) \(command.name)"), "\(page.prefix(60))")
            }
            for setting in table.environment {
                #expect(help.contains(setting.name), "\(table.program) --help lacks \(setting.name)")
            }
        }
    }

    @Test func theParserRefusesInOneLineAndSuggestsTheNearestWord() {
        let client = ClientCommandTable.table
        #expect(usageError(client, "lsit") == "unknown command 'lsit'; did you mean 'list'?")
        #expect(usageError(client, "wacth") == "unknown command 'wacth'; did you mean 'watch'?")
        #expect(usageError(client, "frobnicate") == "unknown command 'frobnicate'")
        #expect(usageError(client, "list --jsn") == "unknown option --jsn; did you mean '--json'?")
        #expect(usageError(client, "list --fliter x") == "unknown option --fliter; did you mean '--filter'?")
        #expect(usageError(client, "list --nope") == "unknown option --nope")
        #expect(usageError(client, "list --timeout") == "--timeout needs a value")
        #expect(usageError(client, "list --json=yes") == "--json takes no value")
        #expect(usageError(client, "list --ca a --cacert b") == "--ca (or --cacert) is given 2 times")
        #expect(usageError(client, "list --filter a --filter b") == "--filter is given 2 times")
        #expect(usageError(client, "watch --quiet") == "--quiet is only for add, edit, rm and import")
        #expect(usageError(client, "-o yaml list") == "--output takes json, tsv, ids or wide, not 'yaml'")
        #expect(usageError(client, "show x --after y") == "--after is only for list")
        #expect(usageError(client, "list --filter=a=b") == nil)
        #expect(usageError(client, "-o=yaml list") == "--output takes json, tsv, ids or wide, not 'yaml'")
        #expect(usageError(client, "-q=x list") == "unknown option -q=x")
        #expect(usageError(client, "list -q") == "--quiet is only for add, edit, rm and import")

        let server = ServerCommandTable.table
        #expect(usageError(server, "serve --log-format xml") == "--log-format takes text or json, not 'xml'")
        #expect(usageError(server, "serve --tls-records=gnutls") == "--tls-records takes own or openssl, not 'gnutls'")
        #expect(usageError(server, "sevre") == "unknown command 'sevre'; did you mean 'serve'?")
        #expect(usageError(server, "certs initt") == "unknown certs command 'initt'; did you mean 'init'?")
        #expect(usageError(server, "certs") == "certs needs a command: init, client, server, revoke or list")
        #expect(usageError(server, "--listen") == "--listen needs a value")
        #expect(usageError(server, "certs init --host a --host b") == nil)
        #expect(usageError(server, "certs list --host a") == "--host is only for certs init and certs server")
        #expect(usageError(BenchCommandTable.table, "fanuot") == "unknown mode 'fanuot'; did you mean 'fanout'?")
        #expect(usageError(TortureCommandTable.table, "crash --writres 3")
            == "unknown option --writres; did you mean '--writers'?")
    }

    @Test func helpIsFoundBeforeTheLineIsCheckedAndNamesTheCommandTyped() throws {
        let line = try ClientCommandTable.table.parse(["--server", "x", "delete", "--nope", "--help"])
        #expect(line.wantsHelp)
        #expect(line.helpTopic == "delete")
        #expect(ClientCommandTable.table.helpText(for: "delete")?.hasPrefix("usage: memo-client rm") == true)
        let unknown = try ClientCommandTable.table.parse(["bogus", "-h"])
        #expect(unknown.helpTopic == "bogus")
        #expect(ClientCommandTable.table.helpText(for: "bogus") == nil)
        let server = try ServerCommandTable.table.parse(["certs", "client", "--help"])
        #expect(server.helpTopic == "certs client")
    }

    /// Every command of memo-client's table is one Invocation knows (the table and its switch agree).
    @Test func everyClientCommandInTheTableIsRunByInvocation() {
        for command in ClientCommandTable.table.commands {
            for name in [command.name] + command.aliases {
                do {
                    _ = try Invocation.parse([name, "x"], environment: [:])
                } catch {
                    #expect(!error.message.hasPrefix("unknown command"), "\(name): \(error.message)")
                }
            }
        }
    }

    /// The code block under "## memo-client" (or "## memo-server") in README.md.
    static func readmeReference(under heading: String) -> String? {
        guard let start = readme.range(of: "\n\(heading)\n"),
            let open = readme.range(of: "```\n", range: start.upperBound..<readme.endIndex),
            let close = readme.range(of: "```\n", range: open.upperBound..<readme.endIndex)
        else { return nil }
        return String(readme[open.upperBound..<close.lowerBound])
    }

    @Test func readmesCommandReferenceIsTheOneMadeFromTheTable() throws {
        let documents = [("## memo-client", ClientCommandTable.table), ("## memo-server", ServerCommandTable.table)]
        for (heading, table) in documents {
            let documented = try #require(Self.readmeReference(under: heading), "README has no \(heading) block")
            let advice = "README's \(heading) reference differs from the table; paste this (help --reference) "
                + "between its ``` lines:\n\(table.reference)"
            #expect(documented == table.reference, Comment(rawValue: advice))
        }
    }

    @Test func readmesEnvironmentTableIsTheClientTablesAndEachDocumentedVariableIsRead() throws {
        // The rows of README's table of connection options: | `--option ARG` ... | `MEMO_X` | default |.
        var documented: [String: String] = [:]
        for line in Self.readme.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) })
        where line.hasPrefix("| `--") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let option = cells[0].split(separator: "`").first?.split(separator: " ").first,
                let variable = cells[1].split(separator: "`").first
            else { continue }
            documented[String(option)] = String(variable)
        }
        var declared: [String: String] = [:]
        for option in ClientCommandTable.table.activeOptions {
            if let variable = option.environment { declared[option.name] = variable }
        }
        #expect(!documented.isEmpty)
        #expect(documented == declared, "README's option/variable table: \(documented); the table: \(declared)")

        // Every MEMO_ variable README names is one a table declares (and so reads), or one the tests, the benchmark
        // scripts or the build read, by that name, outside README.
        let words = Set(Self.readme.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
            .map(String.init).filter { $0.hasPrefix("MEMO_") && $0.count > 5 })
        let tabled = Set(Self.tables.flatMap(\.environmentVariables))
        let root = Self.sourcesFolder.deletingLastPathComponent()
        for word in words.subtracting(tabled) {
            let readElsewhere = ["Tests", ".ci", "bench"].contains { folder in
                Self.files(under: root.appendingPathComponent(folder)).contains { $0.contains("\(word)") }
            }
            #expect(readElsewhere, "README documents \(word), which no table declares and nothing reads")
        }
        // Each variable a table declares is documented, and read where the code says so: options' variables by the
        // parser (ParsedLine.setting), a table's own settings by name in the sources.
        let sources = Self.files(under: Self.sourcesFolder).filter { !$0.contains("public static let table") }
        for table in Self.tables {
            for setting in table.environment {
                #expect(words.contains(setting.name) || table.program != "memo-client", "README lacks \(setting.name)")
                #expect(sources.contains { $0.contains("\"\(setting.name)\"") }, "nothing reads \(setting.name)")
            }
        }
        for variable in declared.values { #expect(words.contains(variable), "README lacks \(variable)") }
    }

    /// Each option's variable of memo-client changes what Invocation builds when set (and the option wins).
    @Test func eachClientOptionsVariableIsReadByInvocation() throws {
        let samples = [
            "MEMO_SERVER": "memo.example:1", "MEMO_CERTS": "/nonexistent", "MEMO_CA": "/a/ca.crt",
            "MEMO_CERT": "/a/c.crt", "MEMO_KEY": "/a/c.key", "MEMO_TIMEOUT": "3", "MEMO_KEEPALIVE": "0",
            "MEMO_CONTEXT": "sample",
        ]
        // A config file whose context "sample" names a server, so that MEMO_CONTEXT has something to choose.
        let config = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: config.path + "/memo", withIntermediateDirectories: true)
        try "context sample\nserver context.example:2\n".write(
            toFile: config.path + "/memo/config", atomically: true, encoding: .utf8)
        func configuration(_ environment: [String: String]) throws -> String {
            let environment = environment.merging(["XDG_CONFIG_HOME": config.path]) { $1 }
            guard case .run(let configuration, _, _, _, _, _) = try Invocation.parse(["list"], environment: environment)
            else { return "" }
            return "\(configuration)"
        }
        let plain = try configuration([:])
        for option in ClientCommandTable.table.activeOptions {
            guard let variable = option.environment else { continue }
            let sample = try #require(samples[variable], "no sample value for \(variable): add one here")
            #expect(try configuration([variable: sample]) != plain, "\(variable) changes nothing")
        }
    }

    /// Whether `word` is in `text` with neither a letter, a digit nor a dash on either side.
    static func containsWord(_ text: String, _ word: String) -> Bool {
        func isPart(_ character: Character?) -> Bool {
            guard let character else { return false }
            return character.isLetter || character.isNumber || character == "-"
        }
        var searchFrom = text.startIndex
        while let found = text.range(of: word, range: searchFrom..<text.endIndex) {
            let before = found.lowerBound == text.startIndex ? nil : text[text.index(before: found.lowerBound)]
            let after = found.upperBound == text.endIndex ? nil : text[found.upperBound]
            if !isPart(before), !isPart(after) { return true }
            searchFrom = found.upperBound
        }
        return false
    }

    /// The text of every file under `folder` (sources, scripts and documents).
    static func files(under folder: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
            return []
        }
        var texts: [String] = []
        for case let url as URL in enumerator
        where ["swift", "sh", "md", "yml", ""].contains(url.pathExtension) || url.lastPathComponent == "run" {
            if let text = try? String(contentsOf: url, encoding: .utf8) { texts.append(text) }
        }
        return texts
    }
}
