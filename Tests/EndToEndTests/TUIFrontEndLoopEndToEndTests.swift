import Foundation
import Glibc
import ServerTestSupport
import Testing

/// The front end's own loop under tmux: keys keep reaching the screen while a save waits on a stopped server, Ctrl-L
/// repaints over whatever wrote on the terminal, Ctrl-Z suspends with the terminal restored and `fg` resumes.
@Suite(
    "memo-client front end under tmux: one loop that never waits", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUIFrontEndLoopEndToEndTests {
    @Test func keysTypedWhileASaveWaitsOnAStoppedServerReachTheScreenAndTheTimeoutIsSaid() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("먼저 있던 메모")
        let server = try #require(fixture.server)
        // A request timeout of 60 s and a keepalive of 10 s: the store would wait long; the front end's own
        // deadline (3 s) is what the user sees first.
        let tmux = try TmuxSession(command: fixture.frontEndCommand(["--timeout", "60", "--keepalive", "10"]))
        defer {
            server.signal(SIGCONT)
            tmux.kill()
            withExtendedLifetime(fixture) {}
        }
        try tmux.waitForScreen(containing: "먼저 있던 메모", "live")
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo", "Ctrl-S save")

        server.signal(SIGSTOP)
        try tmux.type("first")
        try tmux.waitForScreen(containing: "first")
        try tmux.press("C-s")
        try tmux.type(" more keys")
        // Well under the save timeout: the keys are on screen while the save waits, and the scene says it saves.
        let waiting = try tmux.waitForScreen(containing: "first more keys", seconds: 2.5)
        #expect(waiting.contains { $0.contains("saving…") }, "\(waiting)")

        // No answer within the save timeout: said on the status line, the text kept, the choice offered.
        let timedOut = try tmux.waitForScreen(containing: "save timed out", seconds: 30)
        #expect(timedOut.contains { $0.contains("r retry · p keep as pending · Esc keep editing") }, "\(timedOut)")
        #expect(timedOut.contains { $0.contains("first more keys") }, "\(timedOut)")

        // The server answers again: the save lands with what Ctrl-S saw, and the newer text is still on screen.
        server.signal(SIGCONT)
        try tmux.waitForScreen(containing: "saved; what you typed since is not saved yet", seconds: 30)
        #expect(try fixture.client("list").out.contains("\tfirst\n") || fixture.client("list").out.contains("first"))
        // Ctrl-S saves the rest (an update of the same memo) and closes the editor.
        try tmux.press("C-s")
        try tmux.waitForScreen(containing: "> first more keys", seconds: 30)
        let listed = try fixture.client("list", "--json").out
        #expect(listed.contains("first more keys"), "\(listed)")
        #expect(!listed.contains("\"first\""), "\(listed)")
        try tmux.press("q")
        try tmux.waitForScreen(containing: "memo-client exited with 0")
    }

    @Test func ctrlLRepaintsTheWholeScreenOverWhatElseWroteOnTheTerminal() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("다시 그릴 메모")
        let tmux = try TmuxSession(command: fixture.frontEndCommand())
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "다시 그릴 메모", "live")
        // Another process writes on the same terminal (a server's log in the quick start, say).
        let tty = try tmux.pane("#{pane_tty}")
        let handle = try #require(FileHandle(forWritingAtPath: tty))
        handle.write(Data("\u{1B}[2;1Hlog: GARBAGE OVER THE LIST\r\n\u{1B}[10;5Hmore log lines".utf8))
        try handle.close()
        try tmux.waitForScreen(containing: "GARBAGE OVER THE LIST")
        try tmux.press("C-l")
        // A whole screen is more than the pty passes tmux at once: tmux may show the rows before the status bar, so
        // the repaint is done when the garbage is gone and the bar is back; without the repaint the garbage stays.
        let screen = try tmux.waitForScreen("the list repainted") { lines in
            !lines.contains { $0.contains("GARBAGE") || $0.contains("more log lines") }
                && lines.contains { $0.contains("다시 그릴 메모") } && lines.last?.contains("live") == true
        }
        #expect(screen.contains { $0.contains("다시 그릴 메모") }, "\(screen)")
        try tmux.press("q")
        try tmux.waitForScreen(containing: "memo-client exited with 0")
    }

    @Test func ctrlZSuspendsWithTheTerminalRestoredAndFgResumesWithTheScreenBack() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("멈췄다 돌아올 메모")
        let tmux = try TmuxSession(
            command: "env -i PATH=/usr/bin:/bin TERM=xterm-256color PS1='memo-shell> ' bash --norc --noprofile -i")
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "memo-shell>")
        // The front end as a job of the interactive shell, which has job control.
        var command = fixture.frontEndCommand()
        command = String(command[..<command.range(of: "; echo \"memo-client exited")!.lowerBound])
        // Alone on the line: a stopped job ends a list (`a; b` would run b at the stop).
        try tmux.type(command)
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "멈췄다 돌아올 메모", "live")
        #expect(try tmux.pane("#{alternate_on}") == "1")

        try tmux.press("C-z")
        // The shell has the terminal back: its own screen, its job line, the cursor, cooked mode.
        let stopped = try tmux.waitForScreen(containing: "Stopped")
        #expect(try tmux.pane("#{alternate_on}") == "0")
        #expect(try tmux.pane("#{cursor_flag}") == "1")
        #expect(!stopped.contains { $0.contains("멈췄다 돌아올 메모") }, "\(stopped)")
        try tmux.type("echo shell-works")
        try tmux.press("Enter")
        try tmux.waitForScreen("the shell's echo") { lines in lines.contains { $0 == "shell-works" } }

        try tmux.type("fg")
        try tmux.press("Enter")
        let back = try tmux.waitForScreen(containing: "멈췄다 돌아올 메모", "live")
        #expect(try tmux.pane("#{alternate_on}") == "1")
        #expect(!back.contains { $0.contains("shell-works") }, "\(back)")
        // Keys work again.
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo")
        try tmux.press("Escape")
        try tmux.waitForScreen(containing: "멈췄다 돌아올 메모")
        try tmux.press("q")
        try tmux.waitForScreen("the shell again") { lines in
            lines.last { !$0.isEmpty }?.hasPrefix("memo-shell>") == true
        }
        #expect(try tmux.pane("#{alternate_on}") == "0")
        try tmux.type("echo \"memo-client exited with $?\"")
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "memo-client exited with 0")
    }
}
