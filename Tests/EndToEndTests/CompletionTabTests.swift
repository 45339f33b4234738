import Foundation
import MemoClient
import MemoModel
import MemoTestSupport
import Testing

/// The completion scripts under real shells: bash in tmux, completing with a real Tab.
@Suite(
    "Completion scripts under real shells: a Tab in bash and zsh, fish, memo-server's in bash", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct CompletionTabTests {
    /// bash splits the line at ':' (COMP_WORDBREAKS), so `--server 127.0.0.1:7421` reaches the completion function
    /// as three words; the script must join them again, take `show` for the command and ask for the ids of that
    /// server's cache (not the default server's, which holds other ids here).
    @Test func tabAfterServerWithAPortCompletesTheIDsOfThatServersCache() throws {
        let cache = try TemporaryDirectory()
        func memo(_ id: String) -> Memo {
            Memo(id: UUID(uuidString: id)!, content: "x", insertMicros: 1, updateMicros: 1, revision: 1)
        }
        try MirrorCache.save(
            revision: 1, memos: [memo("ab110000-0000-4000-8000-000000000002")],
            to: MirrorCache.defaultPath(server: "127.0.0.1:7421", environment: ["XDG_CACHE_HOME": cache.path]))
        try MirrorCache.save(
            revision: 1, memos: [memo("ab990000-0000-4000-8000-000000000009")],
            to: MirrorCache.defaultPath(server: "127.0.0.1:7420", environment: ["XDG_CACHE_HOME": cache.path]))
        let binary = builtExecutable("memo-client")
        let session = try TmuxSession(
            command: "env -i PATH=/usr/bin:/bin HOME=\(cache.path) TERM=xterm XDG_CACHE_HOME=\(cache.path) "
                + "MEMO_EXPIRY_WARNING=0 PS1='$ ' bash --norc --noprofile",
            width: 220, height: 20)
        defer { session.kill() }
        try session.type("source <(\(binary) completion bash) && echo loaded:$((6 * 7))")
        try session.press("Enter")
        try session.waitForScreen(containing: "loaded:42")

        try session.type("\(binary) --server 127.0.0.1:7421 show ab")
        try session.press("Tab")
        try session.waitForScreen(containing: "--server 127.0.0.1:7421 show ab110000-0000-4000-8000-000000000002")
        try session.press("C-u")

        // The same with --server=HOST:PORT (bash splits at = too).
        try session.type("\(binary) --server=127.0.0.1:7421 rm ab")
        try session.press("Tab")
        try session.waitForScreen(containing: "--server=127.0.0.1:7421 rm ab110000-0000-4000-8000-000000000002")
        try session.press("C-u")

        // Without --server: the default server's cache.
        try session.type("\(binary) edit ab")
        try session.press("Tab")
        try session.waitForScreen(containing: "edit ab990000-0000-4000-8000-000000000009")
    }

    /// zsh runs the same function through bashcompinit: a Tab there completes the ids of the --server given too.
    /// Skipped when zsh is not installed, except in CI (CI=true), where a missing zsh fails it.
    @Test(.enabled(if: InteropTools.runnable("zsh"), "zsh is not installed (apt-get install zsh)"))
    func tabInZshCompletesTheIDsOfTheServerGiven() throws {
        let cache = try TemporaryDirectory()
        try MirrorCache.save(
            revision: 1,
            memos: [Memo(id: UUID(uuidString: "ab110000-0000-4000-8000-000000000002")!, content: "x", insertMicros: 1,
                         updateMicros: 1, revision: 1)],
            to: MirrorCache.defaultPath(server: "127.0.0.1:7421", environment: ["XDG_CACHE_HOME": cache.path]))
        let binary = builtExecutable("memo-client")
        let session = try TmuxSession(
            command: "env -i PATH=/usr/bin:/bin HOME=\(cache.path) TERM=xterm XDG_CACHE_HOME=\(cache.path) "
                + "MEMO_EXPIRY_WARNING=0 zsh -f",
            width: 220, height: 20)
        defer { session.kill() }
        try session.type("source <(\(binary) completion zsh) && echo loaded:$((6 * 7))")
        try session.press("Enter")
        try session.waitForScreen(containing: "loaded:42")
        try session.type("\(binary) --server 127.0.0.1:7421 show ab")
        try session.press("Tab")
        try session.waitForScreen(containing: "--server 127.0.0.1:7421 show ab110000-0000-4000-8000-000000000002")
    }

    /// fish (when installed): the script loads, and completes commands, a command's own options, a value's choices and
    /// the ids of the --server given, in both spellings.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/fish"), "fish is not installed"))
    func fishLoadsTheScriptAndCompletesTheIDsOfTheServerGiven() throws {
        let cache = try TemporaryDirectory()
        try MirrorCache.save(
            revision: 1,
            memos: [Memo(id: UUID(uuidString: "ab110000-0000-4000-8000-000000000002")!, content: "x", insertMicros: 1,
                         updateMicros: 1, revision: 1)],
            to: MirrorCache.defaultPath(server: "127.0.0.1:7421", environment: ["XDG_CACHE_HOME": cache.path]))
        let binary = builtExecutable("memo-client")
        let script = try TemporaryDirectory()
        let path = script.path + "/memo-client.fish"
        let generated = try runTool("memo-client", ["completion", "fish"], environment: cleanEnvironment())
        #expect(generated.status == 0)
        try generated.out.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try runTool("/usr/bin/fish", ["--no-config", "-n", path], environment: cleanEnvironment()).status == 0)
        let result = try runTool("/usr/bin/fish", ["--no-config", "-c", """
            source \(path); or exit 9
            complete -C '\(binary) wa'; echo .
            complete -C '\(binary) list --fil'; echo .
            complete -C '\(binary) add --fil'; echo .
            complete -C '\(binary) --server 127.0.0.1:7421 show ab'; echo .
            complete -C '\(binary) --server=127.0.0.1:7421 rm ab'; echo .
            complete -C '\(binary) show ab'; echo .
            """], environment: cleanEnvironment(["XDG_CACHE_HOME": cache.path, "HOME": cache.path]))
        #expect(result.status == 0, "\(result.err)")
        let answers = result.out.components(separatedBy: ".\n").map { block in
            block.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        #expect(answers.prefix(6) == [
            ["watch"], ["--filter"], [], ["ab110000-0000-4000-8000-000000000002"],
            ["ab110000-0000-4000-8000-000000000002"], [],
        ], "\(result.out)")
    }

    /// memo-server's script from the same table: commands of two words (certs init), each command's own options,
    /// and an option's choices (also after `--option=`), as bash asks for them (COMP_LINE, and COMP_WORDS split as
    /// bash splits them).
    @Test func memoServersBashScriptCompletesItsTwoWordCommandsOptionsAndChoices() throws {
        let binary = builtExecutable("memo-server")
        let script = """
            source <("\(binary)" completion bash) || exit 9
            complete -p memo-server > /dev/null || exit 8
            ask() {
                COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; shift
                COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _memo_server; echo "${COMPREPLY[*]}"
            }
            ask "memo-server ce" memo-server ce
            ask "memo-server certs " memo-server certs ""
            ask "memo-server certs client --re" memo-server certs client --re
            ask "memo-server certs list --re" memo-server certs list --re
            ask "memo-server serve --log-format " memo-server serve --log-format ""
            ask "memo-server --listen 127.0.0.1:0 --tls" memo-server --listen 127.0.0.1 : 0 --tls
            ask "memo-server completion f" memo-server completion f
            ask "memo-server serve --log-format=j" memo-server serve --log-format = j
            """
        let result = try runTool("/usr/bin/bash", ["--norc", "-c", script], environment: cleanEnvironment())
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.split(separator: "\n", omittingEmptySubsequences: false) == [
            "certs", "init client server revoke list", "--read-only", "", "text json", "--tls-records --tls-tickets",
            "fish", "json", "",
        ], "\(result.out)")
    }
}
