import MemoCLI
import MemoClient
import MemoClientCLI
import MemoModel
import Testing

/// memo-client's command line read into an `Invocation`, without a process or a server.
@Suite("Client command line: parsing")
struct InvocationTests {
    private func parse(_ line: String, _ environment: [String: String] = [:]) throws(UsageError) -> Invocation {
        try Invocation.parse(line.split(separator: " ").map(String.init), environment: environment)
    }

    private func command(_ line: String, _ environment: [String: String] = [:]) throws -> ClientCommand? {
        guard case .run(_, let command, _, _, _, _) = try parse(line, environment) else {
            Issue.record("'\(line)' is not a command to run")
            return nil
        }
        return command
    }

    private func usageError(_ line: String) -> String? {
        do {
            _ = try parse(line)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func keepaliveOptionAndItsVariableSetTheIntervalAndZeroTurnsItOff() throws {
        func keepalive(_ line: String, _ environment: [String: String] = [:]) throws -> Duration? {
            guard case .run(let configuration, _, _, _, _, _) = try parse(line, environment) else {
                Issue.record("'\(line)' is not a command to run")
                return nil
            }
            return configuration.keepalive
        }
        #expect(try keepalive("list") == .seconds(3))
        #expect(try keepalive("list --keepalive 1") == .seconds(1))
        #expect(try keepalive("list --keepalive 0.5") == .milliseconds(500))
        #expect(try keepalive("list --keepalive 0") == nil)
        #expect(try keepalive("list", ["MEMO_KEEPALIVE": "0"]) == nil)
        #expect(try keepalive("list --keepalive 2", ["MEMO_KEEPALIVE": "0"]) == .seconds(2))
        #expect(usageError("list --keepalive -1")
            == "--keepalive takes a number of seconds from 0 (off) to 86400, not '-1'")
        #expect(throws: UsageError.self) { try parse("list", ["MEMO_KEEPALIVE": "soon"]) }
    }

    @Test func commandsAndTheirAliasesReadTheirArguments() throws {
        #expect(try command("list --filter 장보기 --limit 3") == .list(filter: "장보기", limit: 3))
        #expect(try command("ls") == .list(filter: nil, limit: nil))
        #expect(try command("get abc") == .show(id: "abc"))
        #expect(try command("add buy milk") == .add(.literal("buy milk"), allowEmpty: false))
        #expect(try command("new - --allow-empty") == .add(.standardInput, allowEmpty: true))
        #expect(try command("edit abc --if-revision 7 new text")
            == .edit(id: "abc", text: .literal("new text"), ifRevision: 7, allowEmpty: false))
        #expect(try command("edit abc --if-revision 7 --merge new text")
            == .edit(id: "abc", text: .literal("new text"), ifRevision: 7, allowEmpty: false, merge: true))
        #expect(try command("delete abc") == .remove(id: "abc", ifRevision: nil))
        #expect(try command("import -") == .importMemos(path: "-"))
        #expect(try command("watch --json") == .watch)
    }

    @Test func flagsComeBeforeTheEnvironmentWhichComesBeforeTheDefaults() throws {
        guard case .run(let fromFlag, _, let json, _, _, _) = try parse("--server a.example:1 --json list", [
            "MEMO_SERVER": "b.example:2", "MEMO_TIMEOUT": "3",
        ]) else { throw UsageError("not run") }
        #expect(fromFlag.server == "a.example:1")
        #expect(fromFlag.requestTimeout == .seconds(3))
        #expect(json)
        guard case .run(let fromEnvironment, _, _, _, _, _) = try parse("list", ["MEMO_SERVER": "b.example:2"]) else {
            throw UsageError("not run")
        }
        #expect(fromEnvironment.server == "b.example:2")
        guard case .run(let defaults, let none, _, _, _, _) = try parse("", [:]) else { throw UsageError("not run") }
        #expect(defaults.requestTimeout == .seconds(10))
        #expect(none == nil)
    }

    @Test func helpVersionAndCompletionAreNotCommandsToRun() throws {
        guard case .help(let topic) = try parse("--server x edit --help") else { throw UsageError("no help") }
        #expect(topic == "edit")
        guard case .version = try parse("--version") else { throw UsageError("no version") }
        guard case .completion(let shell) = try parse("completion zsh") else { throw UsageError("no completion") }
        #expect(shell == "zsh")
    }

    @Test func misuseIsAUsageErrorThatSaysWhatIsWrong() {
        #expect(usageError("frobnicate") == "unknown command 'frobnicate'")
        #expect(usageError("add --filter x text") == "--filter is only for list")
        #expect(usageError("list --if-revision 3") == "--if-revision is only for edit and rm")
        #expect(usageError("edit abc --if-revision seven x") == "--if-revision takes a revision number, not 'seven'")
        #expect(usageError("add") == "add needs the memo's text (or - to read it from stdin)")
        #expect(usageError("completion tcsh") == "completion takes bash, zsh or fish, not 'tcsh'")
        #expect(usageError("-x json list") == "unknown option -x")
        #expect(usageError("list --locale ko_KR") == "--locale is only for the terminal front end (no command)")
    }

    @Test func outputTakesOneOfFourFormsAgreeingWithJSONAndOnlyWhereItApplies() throws {
        func output(_ line: String) throws -> OutputFormat? {
            guard case .run(_, _, _, _, _, let output) = try parse(line) else { return nil }
            return output
        }
        #expect(try output("-o ids list") == .ids)
        #expect(try output("list --output wide") == .wide)
        #expect(try output("show abc --output=tsv") == .tsv)
        #expect(try output("show abc -o=tsv") == .tsv)
        #expect(try output("list -owide") == .wide)
        #expect(try output("--json list") == nil)
        guard case .run(_, _, let json, _, _, _) = try parse("-o json list") else { throw UsageError("not run") }
        #expect(json)
        #expect(try output("--json -o json list") == .json)
        #expect(usageError("-o yaml list") == "--output takes json, tsv, ids or wide, not 'yaml'")
        #expect(usageError("--json -o tsv list") == "--json and -o tsv ask for different output")
        #expect(usageError("-o ids -o wide list") == "--output is given 2 times")
        #expect(usageError("-o ids watch") == "-o ids is only for list, show, add, edit and rm")
        #expect(usageError("-o wide status") == "-o wide is only for list, show, add, edit and rm")
        #expect(usageError("-o tsv export") == "export prints JSON lines only: -o tsv does not apply to it")
        #expect(try command("-o tsv watch") == .watch)
        #expect(usageError("-o ids") == "-o ids is for commands, not the terminal front end")
        #expect(try command("list --limit 5 --after " + String(repeating: "0", count: 48))
            == .list(filter: nil, limit: 5, after: ListCursor(token: String(repeating: "0", count: 48))))
    }
}
