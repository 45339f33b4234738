import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoPKI
import MemoTLS
import MemoTUI
import MemoTestSupport
import ServerTestSupport
import Testing

/// The front end under tmux where the network or the terminal is the hard part: writes while the server is down,
/// the external editor, and the status bar saying why it cannot connect.
@Suite(
    "memo-client front end under tmux: offline writes, $EDITOR, refusals", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUIOfflineEndToEndTests {
    /// The front end with `--keepalive SECONDS`, live on a server process that `body` may stop (SIGSTOP): it is
    /// continued before the fixture stops it (a stopped process would not handle SIGTERM).
    private func withStoppableServer(
        keepalive: String, _ body: (FrontEndFixture, ServerProcess, TmuxSession) throws -> Void
    ) throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("멈출 서버의 메모")
        let server = try #require(fixture.server)
        let tmux = try TmuxSession(command: fixture.frontEndCommand(["--keepalive", keepalive]))
        // Naming the fixture here keeps it alive until then.
        defer {
            server.signal(SIGCONT)
            tmux.kill()
            withExtendedLifetime(fixture) {}
        }
        try tmux.waitForScreen(containing: "멈출 서버의 메모", "live")
        try body(fixture, server, tmux)
    }

    @Test func statusBarSaysTheServerIsNotAnsweringWhileItIsStoppedAndLiveOnceItAnswersAgain() throws {
        try withStoppableServer(keepalive: "1") { _, server, tmux in
            // A stopped server keeps its TCP connection up: only the unanswered ping tells, and the bar says so.
            server.signal(SIGSTOP)
            let screen = try tmux.waitForScreen(containing: "reconnecting (server not answering, try ")
            #expect(!screen.contains { $0.contains("live") }, "\(screen)")

            server.signal(SIGCONT)
            try tmux.waitForScreen("live again") { lines in
                lines.contains { $0.contains("live") } && !lines.contains { $0.contains("not answering") }
            }
            try tmux.press("q")
            try tmux.waitForScreen(containing: "memo-client exited with 0")
        }
    }

    @Test func withKeepaliveOffAWriteToAStoppedServerMakesTheBarSayUnconfirmedNotLive() throws {
        try withStoppableServer(keepalive: "0") { fixture, server, tmux in
            // No ping checks the connection: only the save's missing answer tells that the server stopped.
            server.signal(SIGSTOP)
            try tmux.press("n")
            try tmux.type("기다리는 저장")
            try tmux.press("C-s")
            let screen = try tmux.waitForScreen(containing: "unconfirmed (server not answering)")
            #expect(!screen.contains { $0.contains("● ") && $0.contains("live") }, "\(screen)")

            // The answer comes when the server runs again: live, nothing pending.
            server.signal(SIGCONT)
            try tmux.waitForScreen("live again, the save confirmed") { lines in
                lines.contains { $0.contains("live") }
                    && !lines.contains { $0.contains("unconfirmed") || $0.contains("pending") }
            }
            #expect(try fixture.client("list").out.contains("기다리는 저장"))
        }
    }

    @Test func writesMadeOfflineShowAtOnceSurviveARestartAndReachTheServerWhenItIsBack() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("오프라인에서 지울 메모")
        _ = try fixture.add("그대로 남을 메모")
        // A long request timeout: a write that waited for the network would keep the screen for 60 s.
        let command = fixture.frontEndCommand(["--timeout", "60"])

        // A first run fills the cache.
        let online = try TmuxSession(command: command)
        defer { online.kill() }
        try online.waitForScreen(containing: "그대로 남을 메모", "● ")
        try online.press("q")
        try online.waitForScreen(containing: "memo-client exited with 0")

        fixture.stopServer()
        let offline = try TmuxSession(command: command)
        defer { offline.kill() }
        try offline.waitForScreen(containing: "오프라인에서 지울 메모", "offline (connection refused)")

        // A new memo: Ctrl-S returns to the list at once, the memo on it marked pending.
        try offline.press("n")
        try offline.waitForScreen(containing: "New memo")
        try offline.type("오프라인에서 쓴 메모")
        try offline.press("C-s")
        var screen = try offline.waitForScreen("the new memo on the list, pending", seconds: 5) { lines in
            lines.contains { $0.hasPrefix("> 오프라인에서 쓴 메모") && $0.contains("pending") }
                && lines.first?.contains("Memos") == true
        }
        // Delete another: gone at once, and both writes counted.
        try offline.press("G")
        try offline.waitForScreen(containing: "> 오프라인에서 지울 메모")
        try offline.press("d")
        try offline.waitForScreen(containing: "? y/N")
        try offline.press("y")
        screen = try offline.waitForScreen("the memo gone and 2 pending", seconds: 5) { lines in
            !lines.contains { $0.contains("오프라인에서 지울 메모") } && lines.last?.contains("2 pending") == true
        }
        #expect(screen.contains { $0.contains("오프라인에서 쓴 메모") && $0.contains("pending") })

        // Quit and start again, still offline: the writes are still there, still pending.
        try offline.press("q")
        try offline.waitForScreen(containing: "memo-client exited with 0")
        let again = try TmuxSession(command: command)
        defer { again.kill() }
        screen = try again.waitForScreen(containing: "오프라인에서 쓴 메모", "2 pending")
        #expect(!screen.contains { $0.contains("오프라인에서 지울 메모") })
        #expect(screen.contains { $0.contains("오프라인에서 쓴 메모") && $0.contains("pending") })
        #expect(screen.last?.contains("offline") == true || screen.last?.contains("connecting") == true)

        // The server comes back: both writes are sent and confirmed, and the marks go.
        try fixture.startServer()
        screen = try again.waitForScreen("both writes confirmed", seconds: 30) { lines in
            lines.last?.contains("● ") == true && !lines.contains { $0.contains("pending") }
                && lines.contains { $0.contains("오프라인에서 쓴 메모") }
        }
        #expect(!screen.contains { $0.contains("오프라인에서 지울 메모") })
        // Another client sees them.
        let listed = try fixture.client("list").out
        #expect(listed.contains("오프라인에서 쓴 메모"), "\(listed)")
        #expect(!listed.contains("오프라인에서 지울 메모"), "\(listed)")
        #expect(listed.contains("그대로 남을 메모"), "\(listed)")
    }

    @Test func aQueuedEditThatMeetsAConflictOffersTheOnlineChoiceAndARefusedCreateIsRolledBackWithItsReason()
        throws
    {
        let fixture = try FrontEndFixture()
        let added = try fixture.add("처음 내용")
        #expect(try fixture.client("edit", added.id, "그쪽에서 고친 내용").status == 0)
        let line = try #require(try fixture.client("--json", "show", added.id).out.split(separator: "\n").first)
        let record = try MemoJSON.record(fromLine: String(line))
        let memo = Memo(
            id: record.id, content: record.content, insertMicros: record.insertMicros,
            updateMicros: record.updateMicros ?? record.insertMicros, revision: record.revision ?? 0)
        // A queue left by an earlier run that edited the memo offline from revision 1 (it is now at 2), and a
        // create with an id the server already holds for other content.
        var ours = memo
        ours.content = "오프라인에서 고친 내용"
        var clash = memo
        clash.content = "같은 id의 다른 메모"
        let queuePath = try fixture.queuePath()
        try WriteQueueFile.save([
            QueuedWrite(kind: .update, memo: ours, expectedRevision: 1, afterQueued: false),
            QueuedWrite(kind: .create, memo: clash, expectedRevision: nil, afterQueued: false),
        ], identity: try fixture.identity(), to: queuePath)

        let tmux = try TmuxSession(command: fixture.frontEndCommand())
        defer { tmux.kill() }
        // The edit comes back in the editor with their revision and first line, as an online conflict would.
        var screen = try tmux.waitForScreen(
            containing: "changed elsewhere, now revision \(memo.revision)", "그쪽에서 고친 내용")
        #expect(screen.contains { $0.contains("o overwrite") })
        #expect(screen.contains { $0.hasPrefix("오프라인에서 고친 내용") })
        // The create was refused: rolled back, its reason on the list once the editor closes.
        try tmux.press("o")
        screen = try tmux.waitForScreen(containing: "the server refused “같은 id의 다른 메모”")
        try tmux.waitForScreen("nothing pending") { !$0.contains { $0.contains("pending") } }
        #expect(try fixture.client("show", added.id).out.hasPrefix("오프라인에서 고친 내용"))
        // Removed by the front end's writer, off its client loop: polled.
        #expect(pollUntil { !FileManager.default.fileExists(atPath: queuePath) })
    }

    @Test func ctrlEGivesTheTerminalToAnEditorThatReadsDevTtyAndTakesItsTextBack() throws {
        let fixture = try FrontEndFixture()
        let record = fixture.data.path + "/editor"
        // An editor that asks on the terminal (as vi would use it) and writes the answer into the file; it
        // records the file's path and modes for the test.
        let script = fixture.data.path + "/ask-editor.sh"
        try """
            #!/bin/sh
            echo "$1" > '\(record)-path'
            stat -c %a "$1" > '\(record)-file-mode'
            stat -c %a "$(dirname "$1")" > '\(record)-folder-mode'
            printf 'editor asks: what shall the memo say? ' > /dev/tty
            IFS= read -r line < /dev/tty
            printf '%s\\n' "$line" > "$1"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)

        let tmux = try TmuxSession(command: fixture.frontEndCommand(environment: ["EDITOR": script]))
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "no memos yet")
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo")
        try tmux.press("C-e")
        // The editor has the terminal: its question shows on the main screen, and it reads the answer.
        try tmux.waitForScreen(containing: "editor asks: what shall the memo say?", seconds: 10)
        #expect(try tmux.pane("#{alternate_on}") == "0")
        try tmux.type("편집기에서 쓴 메모")
        try tmux.press("Enter")
        // Back in the front end, redrawn, with the editor's text in the compose scene.
        try tmux.waitForScreen(containing: "New memo", "modified")
        try tmux.waitForScreen(containing: "편집기에서 쓴 메모")
        #expect(try tmux.pane("#{alternate_on}") == "1")
        try tmux.press("C-s")
        try tmux.waitForScreen(containing: "> 편집기에서 쓴 메모")
        #expect(try fixture.client("list").out.contains("편집기에서 쓴 메모"))

        // The file was private while it lived and is gone now, with its folder.
        let path = try String(contentsOfFile: record + "-path", encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(try String(contentsOfFile: record + "-file-mode", encoding: .utf8) == "600\n")
        #expect(try String(contentsOfFile: record + "-folder-mode", encoding: .utf8) == "700\n")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/vi"), "no vi installed"))
    func ctrlEWithoutEditorRunsViWhichGetsTheTerminal() throws {
        let fixture = try FrontEndFixture()
        let tmux = try TmuxSession(command: fixture.frontEndCommand(environment: ["EDITOR": "", "VISUAL": ""]))
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "no memos yet")
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo")
        try tmux.press("C-e")
        // vi shows the private file's name on its last line, and takes keys.
        try tmux.waitForScreen(containing: "memo.txt", seconds: 10)
        try tmux.press("i")
        try tmux.type("vi로 쓴 메모")
        try tmux.press("Escape")
        try tmux.type(":wq")
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "New memo", "modified")
        try tmux.waitForScreen(containing: "vi로 쓴 메모")
        try tmux.press("C-s")
        try tmux.waitForScreen(containing: "> vi로 쓴 메모")
    }

    @Test func anEditorThatIsMissingOrExitsNonZeroSaysSoAndTheTextStays() throws {
        let fixture = try FrontEndFixture()
        for (editor, said) in [
            ("/nonexistent", "editor /nonexistent: not found"),
            ("false", "editor false exited with status 1; the text is unchanged"),
        ] {
            let tmux = try TmuxSession(command: fixture.frontEndCommand(environment: ["EDITOR": editor, "VISUAL": ""]))
            defer { tmux.kill() }
            try tmux.waitForScreen(containing: "no memos yet")
            try tmux.press("n")
            try tmux.waitForScreen(containing: "New memo")
            try tmux.type("편집기 없이 쓴 글")
            try tmux.press("C-e")
            let screen = try tmux.waitForScreen(containing: said)
            // Back in the front end with the text as it was, still unsaved.
            #expect(screen.contains { $0.hasPrefix("편집기 없이 쓴 글") }, "\(screen)")
            #expect(screen.first?.contains("modified") == true, "\(screen)")
            #expect(try tmux.pane("#{alternate_on}") == "1")
            // The next key clears the line and edits as usual.
            try tmux.type("!")
            try tmux.waitForScreen("the message gone and the key typed") { lines in
                !lines.contains { $0.contains(said) } && lines.contains { $0.hasPrefix("편집기 없이 쓴 글!") }
            }
            try tmux.press("C-c")
            try tmux.waitForScreen(containing: "memo-client exited with")
        }
    }

    @Test func sigtermWhileTheEditorRunsRestoresTheTerminalAndRemovesTheEditorsFile() throws {
        let fixture = try FrontEndFixture()
        let record = fixture.data.path + "/editor-path"
        let script = fixture.data.path + "/waiting-editor.sh"
        try """
            #!/bin/sh
            echo "$1" > '\(record)'
            printf 'editor waiting' > /dev/tty
            read line < /dev/tty
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let tmux = try TmuxSession(command: fixture.frontEndCommand(environment: ["EDITOR": script]))
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "no memos yet")
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo")
        try tmux.press("C-e")
        try tmux.waitForScreen(containing: "editor waiting")
        let path = try String(contentsOfFile: record, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(FileManager.default.fileExists(atPath: path))

        let client = try #require(childProcess(of: try tmux.pane("#{pane_pid}")))
        kill(client, SIGTERM)
        try tmux.waitForScreen(containing: "memo-client exited with 143")
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent))
    }

    @Test func theStatusBarSaysWhyTLSFailsAndQuestionMarkShowsTheWholeMessage() throws {
        let fixture = try FrontEndFixture()
        let other = try TestCertificates()

        // Our CA did not sign the server's certificate.
        let untrusting = try TmuxSession(command: fixture.frontEndCommand(["--ca", other.path + "/ca.crt"]))
        defer { untrusting.kill() }
        var screen = try untrusting.waitForScreen(
            containing: "✗", "TLS: the server's certificate is not signed by your CA")
        // No cache and no server: the list is unknown, not empty.
        #expect(screen.contains { $0.contains("not connected") }, "\(screen)")
        #expect(!screen.contains { $0.contains("no memos yet") })
        try untrusting.press("?")
        screen = try untrusting.waitForScreen(containing: "TLS with \(fixture.address) failed")
        #expect(screen.contains { $0.contains("unknown CA") }, "\(screen)")

        // The server refuses our certificate (made by another CA).
        let refused = try TmuxSession(command: fixture.frontEndCommand([
            "--cert", other.path + "/client.crt", "--key", other.path + "/client.key",
        ]))
        defer { refused.kill() }
        try refused.waitForScreen(containing: "✗", "certificate refused by the server")
    }

    @Test func aRevokedCertificateIsSaidSoOnTheStatusBarAndInTheHelp() throws {
        let fixture = try FrontEndFixture()
        let server = try #require(fixture.server)
        _ = try CertificateAuthority.revoke("reader", directory: fixture.certificates.path)
        server.signal(SIGHUP)
        try server.waitForLog("reloaded certificates")
        let certs = fixture.certificates.path
        let tmux = try TmuxSession(command: fixture.frontEndCommand([
            "--cert", certs + "/reader.crt", "--key", certs + "/reader.key",
        ]))
        defer { tmux.kill() }
        // Not "certificate refused by the server", which says nothing of why: the server's alert said revoked.
        let screen = try tmux.waitForScreen(containing: "✗", "certificate revoked (? why)")
        #expect(screen.last?.contains("? help") == true, "\(screen)")
        try tmux.press("?")
        try tmux.waitForScreen(containing: "TLS with \(fixture.address) failed")
    }

    @Test func aReadOnlyCertificateSeesReadOnlyAndItsWriteKeysAnswerWithOneLine() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("읽기만 하는 메모")
        let certs = fixture.certificates.path
        let tmux = try TmuxSession(command: fixture.frontEndCommand([
            "--cert", certs + "/reader.crt", "--key", certs + "/reader.key",
        ]))
        defer { tmux.kill() }
        var screen = try tmux.waitForScreen(containing: "읽기만 하는 메모", "read-only")
        #expect(screen.last?.contains("n new") == false, "\(screen.last ?? "")")
        try tmux.press("n")
        screen = try tmux.waitForScreen(containing: "read-only: this certificate may not write")
        #expect(!screen.contains { $0.contains("New memo") })
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "s copy")
        try tmux.press("e")
        screen = try tmux.waitForScreen(containing: "read-only: this certificate may not write")
        #expect(!screen.contains { $0.contains("Edit memo") })
    }
}
