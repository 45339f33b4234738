import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoTestSupport
import ServerTestSupport
import Testing

/// The front end under tmux where a person's text could be lost offline: the role a read-only certificate has
/// offline, and a queue that cannot be written.
@Suite(
    "memo-client front end under tmux: nothing typed is lost offline", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUINothingLostEndToEndTests {
    @Test func aReadOnlyCertificateIsReadOnlyOfflineTooAndItsWriteKeysSaySoUpFront() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("읽기만 하는 메모")
        let certs = fixture.certificates.path
        let command = fixture.frontEndCommand(["--cert", certs + "/reader.crt", "--key", certs + "/reader.key"])
        // Online once: the welcome says read-only, and the cache remembers it.
        try runOnce(command, until: "읽기만 하는 메모", "read-only")

        fixture.stopServer()
        let offline = try TmuxSession(command: command)
        defer { offline.kill() }
        var screen = try offline.waitForScreen(containing: "읽기만 하는 메모", "offline", "read-only")
        try offline.press("n")
        screen = try offline.waitForScreen(containing: "read-only: this certificate may not write")
        #expect(!screen.contains { $0.contains("New memo") })
        #expect(!screen.contains { $0.contains("pending") })
        // Nothing was queued to be rolled back at reconnect.
        #expect(!FileManager.default.fileExists(atPath: try fixture.queuePath(certificate: "reader")))
    }

    @Test func aQueueThatCannotBeWrittenIsShownOnTheStatusLineAndTheWriteStaysPending() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("디스크가 찬 날")
        let command = fixture.frontEndCommand(["--timeout", "60"])
        try runOnce(command, until: "디스크가 찬 날", "● ")

        fixture.stopServer()
        // The cache folder's files stay (the cache was read into memory); new files no longer fit.
        let folder = (fixture.cachePath as NSString).deletingLastPathComponent
        let cache = try Data(contentsOf: URL(fileURLWithPath: fixture.cachePath))
        let disk = try SmallDisk(in: folder)
        defer { disk.remove() }
        try cache.write(to: URL(fileURLWithPath: fixture.cachePath))
        try disk.fill()

        let offline = try TmuxSession(command: command)
        defer { offline.kill() }
        try offline.waitForScreen(containing: "디스크가 찬 날", "offline")
        try writeNewMemo("디스크에 못 쓴 글", in: offline)
        let screen = try offline.waitForScreen("the write pending and the bar saying it is not on disk") { lines in
            lines.contains { $0.contains("디스크에 못 쓴 글") && $0.contains("pending") }
                && lines.last?.contains("pending writes not saved to disk") == true
        }
        #expect(!screen.contains { $0.contains("New memo") })
        // Quitting while the disk is still full prints the text rather than lose it.
        try offline.press("q")
        try offline.waitForScreen(containing: "writes kept in memory only", "--- create", "디스크에 못 쓴 글")
    }

    @Test func aWriteRefusedAtReplayWaitsInTheNotSavedScreenAndCanBeSavedAsANewMemo() throws {
        let fixture = try FrontEndFixture()
        let added = try fixture.add("서버에 있는 메모")
        let line = try #require(try fixture.client("--json", "show", added.id).out.split(separator: "\n").first)
        let record = try MemoJSON.record(fromLine: String(line))
        // A queue left by an earlier run: a create whose id the server already holds for other content.
        let clash = Memo(
            id: record.id, content: "같은 id로 쓴 다른 글", insertMicros: record.insertMicros,
            updateMicros: record.insertMicros, revision: 0)
        let queuePath = try fixture.queuePath()
        try WriteQueueFile.save(
            [QueuedWrite(kind: .create, memo: clash, expectedRevision: nil, afterQueued: false)],
            identity: try fixture.identity(), to: queuePath)

        let tmux = try TmuxSession(command: fixture.frontEndCommand())
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "the server refused “같은 id로 쓴 다른 글”")
        // Kept on disk (written off the client's loop, so polled).
        #expect(pollUntil { FileManager.default.fileExists(atPath: NotSavedFile.path(besideQueue: queuePath)) })
        try tmux.press("!")
        let screen = try tmux.waitForScreen(containing: "Not saved", "> 같은 id로 쓴 다른 글", "new memo refused")
        #expect(screen.last?.contains("n save as new") == true, "\(screen.last ?? "")")
        try tmux.press("n")
        try tmux.waitForScreen(containing: "nothing waits here")
        try tmux.waitForScreen("the new memo confirmed") { !$0.contains { $0.contains("pending") } }
        let listed = try fixture.client("list").out
        #expect(listed.contains("같은 id로 쓴 다른 글"), "\(listed)")
        #expect(listed.contains("서버에 있는 메모"), "\(listed)")
        try tmux.press("Escape")
        try tmux.waitForScreen(containing: "같은 id로 쓴 다른 글", "서버에 있는 메모")
        try tmux.press("q")
        try tmux.waitForScreen(containing: "memo-client exited with 0")
        #expect(!FileManager.default.fileExists(atPath: NotSavedFile.path(besideQueue: queuePath)))
    }

    /// A queue left by an earlier run that edited a memo offline from revision 1, which another client has since
    /// moved to revision 2: replayed, it is refused as a conflict, kept in the not-saved list, and opened in the
    /// editor with the online choice.
    private func queuedConflict(_ fixture: FrontEndFixture) throws -> (id: String, notSavedPath: String) {
        let added = try fixture.add("처음 내용")
        #expect(try fixture.client("edit", added.id, "그쪽에서 고친 내용").status == 0)
        let line = try #require(try fixture.client("--json", "show", added.id).out.split(separator: "\n").first)
        let record = try MemoJSON.record(fromLine: String(line))
        let ours = Memo(
            id: record.id, content: "오프라인에서 고친 내용", insertMicros: record.insertMicros,
            updateMicros: record.updateMicros ?? record.insertMicros, revision: record.revision ?? 0)
        let queuePath = try fixture.queuePath()
        try WriteQueueFile.save(
            [QueuedWrite(kind: .update, memo: ours, expectedRevision: 1, afterQueued: false)],
            identity: try fixture.identity(), to: queuePath)
        return (added.id, NotSavedFile.path(besideQueue: queuePath))
    }

    @Test(arguments: ["o", "k"])
    func aReplayedConflictResolvedInTheEditorLeavesNothingInTheNotSavedList(key: String) throws {
        let fixture = try FrontEndFixture()
        let (id, notSavedPath) = try queuedConflict(fixture)
        let tmux = try TmuxSession(command: fixture.frontEndCommand())
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "o overwrite", "그쪽에서 고친 내용")
        // Written by the front end's writer, off its client loop, perhaps after the screen shows the conflict: polled.
        #expect(pollUntil { FileManager.default.fileExists(atPath: notSavedPath) })
        // o saves ours over theirs, k keeps theirs: either way the conflict is decided, and its entry goes.
        try tmux.press(key)
        try tmux.waitForScreen("the editor closed, nothing pending") { screen in
            !screen.contains { $0.contains("o overwrite") || $0.contains("pending") }
        }
        let expected = key == "o" ? "오프라인에서 고친 내용" : "그쪽에서 고친 내용"
        #expect(pollUntil { (try? fixture.client("show", id).out.hasPrefix(expected)) == true })
        // Removed by the front end's writer, off its client loop: polled.
        #expect(pollUntil { !FileManager.default.fileExists(atPath: notSavedPath) })
        try tmux.press("!")
        try tmux.waitForScreen(containing: "nothing waits here")
    }

    @Test func writesQueuedOfflineWithOneCertificateAreNeitherSentNorTouchedUnderAnother() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("처음부터 있던 메모")
        let certs = fixture.certificates.path
        let writer = fixture.frontEndCommand(["--timeout", "60"])
        let reader = fixture.frontEndCommand([
            "--timeout", "60", "--cert", certs + "/reader.crt", "--key", certs + "/reader.key",
        ])
        try runOnce(writer, until: "처음부터 있던 메모", "● ")

        // Offline with the read-write certificate: a new memo waits in its queue.
        fixture.stopServer()
        let offline = try TmuxSession(command: writer)
        defer { offline.kill() }
        try offline.waitForScreen(containing: "처음부터 있던 메모", "offline")
        try writeNewMemo("쓰는 인증서로 쓴 글", in: offline)
        try offline.waitForScreen(containing: "쓰는 인증서로 쓴 글", "1 pending")
        try offline.press("q")
        try offline.waitForScreen(containing: "memo-client exited with 0")
        let queuePath = try fixture.queuePath()
        let queued = try Data(contentsOf: URL(fileURLWithPath: queuePath))

        // Back online with the read-only certificate: the writer's queue is not sent (it would be refused and
        // lost) and its file is left as it was.
        try fixture.startServer()
        let other = try TmuxSession(command: reader)
        defer { other.kill() }
        let screen = try other.waitForScreen(containing: "처음부터 있던 메모", "● ", "read-only")
        #expect(!screen.contains { $0.contains("쓰는 인증서로 쓴 글") })
        #expect(!screen.contains { $0.contains("refused") })
        try other.press("q")
        try other.waitForScreen(containing: "memo-client exited with 0")
        #expect(try Data(contentsOf: URL(fileURLWithPath: queuePath)) == queued)
        #expect(!(try fixture.client("list").out.contains("쓰는 인증서로 쓴 글")))

        // The certificate that wrote it sends it.
        let again = try TmuxSession(command: writer)
        defer { again.kill() }
        try again.waitForScreen("the queued memo confirmed", seconds: 30) { lines in
            lines.last?.contains("● ") == true && !lines.contains { $0.contains("pending") }
                && lines.contains { $0.contains("쓰는 인증서로 쓴 글") }
        }
        #expect(try fixture.client("list").out.contains("쓰는 인증서로 쓴 글"))
        #expect(pollUntil { !FileManager.default.fileExists(atPath: queuePath) })
    }

    @Test func anOfflineEditOfAMemoDeletedElsewhereOffersSaveAsNewAtReplay() throws {
        let fixture = try FrontEndFixture()
        let added = try fixture.add("곧 지워질 메모")
        let command = fixture.frontEndCommand(["--timeout", "60"])
        try runOnce(command, until: "곧 지워질 메모", "● ")

        // Offline: the memo is edited, and the edit waits in the queue.
        fixture.stopServer()
        let offline = try TmuxSession(command: command)
        defer { offline.kill() }
        try offline.waitForScreen(containing: "곧 지워질 메모", "offline")
        try offline.press("Enter")
        try offline.press("e")
        try offline.waitForScreen(containing: "Edit memo")
        try offline.type("오프라인에서 고친 글 ")
        try offline.press("C-s")
        try offline.waitForScreen(containing: "오프라인에서 고친 글", "1 pending")
        try offline.press("q")  // the detail back to the list
        try offline.waitForScreen(containing: "Memos")
        try offline.press("q")
        try offline.waitForScreen(containing: "memo-client exited with 0")

        // Meanwhile someone deletes it; at replay the edit is refused (not found): the front end offers to save
        // the text as a new memo, as it does online, instead of throwing the text away.
        try fixture.startServer()
        #expect(try fixture.client("rm", added.id).status == 0)
        let again = try TmuxSession(command: command)
        defer { again.kill() }
        try again.waitForScreen(containing: "o save as new")
        try again.press("o")
        // The new memo on the list, confirmed (no longer pending), and on the server.
        try again.waitForScreen("the text saved as a new memo", seconds: 30) { lines in
            lines.contains { $0.contains("오프라인에서 고친 글") && !$0.contains("pending") }
                && lines.last?.contains("● ") == true
        }
        #expect(try pollUntil { try fixture.client("list").out.contains("오프라인에서 고친 글") })
    }

    @Test func aDamagedQueueIsMovedAsideAndSaidWhereNeverDeleted() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("손상된 큐 옆의 메모")
        let command = fixture.frontEndCommand()
        try runOnce(command, until: "손상된 큐 옆의 메모", "● ")
        let queuePath = try fixture.queuePath()
        let damaged = Data("not a queue file: the user's writes may be in here".utf8)
        try damaged.write(to: URL(fileURLWithPath: queuePath))

        let tmux = try TmuxSession(command: command)
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: "손상된 큐 옆의 메모", "● ")
        try tmux.press("q")
        // What the front end said before it took the screen shows again once it gives it back.
        try tmux.waitForScreen(containing: "memo-client exited with 0")
        let said = try tmux.waitForScreen(containing: "the offline write queue was moved to", ".damaged")
        // The cache was sound: it is not blamed (nor dropped).
        #expect(!said.contains { $0.contains("ignoring the mirror cache") }, "\(said)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: queuePath + ".damaged")) == damaged)
    }

    /// Runs the front end with `command` until `texts` show, then quits it (and sees it exit 0): what a first run
    /// leaves behind, the cache above all.
    private func runOnce(_ command: String, until texts: String...) throws {
        let tmux = try TmuxSession(command: command)
        defer { tmux.kill() }
        for text in texts { try tmux.waitForScreen(containing: text) }
        try tmux.press("q")
        try tmux.waitForScreen(containing: "memo-client exited with 0")
    }

    /// `n`, the text, Ctrl-S.
    private func writeNewMemo(_ text: String, in tmux: TmuxSession) throws {
        try tmux.press("n")
        try tmux.waitForScreen(containing: "New memo")
        try tmux.type(text)
        try tmux.press("C-s")
    }
}
