import Foundation
import MemoPKI
import MemoTestSupport
import ServerTestSupport
import MemoViewModels
import Testing

/// The history and trash scenes against a `memo-server` process, on two terminals with two certificates (alice and
/// bob): each sees the other's edits, restores and deletes live.
@Suite(
    "memo-client front end's history and trash under tmux, two terminals", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUIHistoryEndToEndTests {
    /// The front end with certificate `name` (issued by the fixture's CA for the test).
    private func frontEnd(_ fixture: FrontEndFixture, as name: String) throws -> TmuxSession {
        let certs = fixture.certificates.path
        _ = try CertificateAuthority.issueClient(name: name, directory: certs, validity: .days(1))
        return try TmuxSession(command: fixture.frontEndCommand([
            "--cert", certs + "/\(name).crt", "--key", certs + "/\(name).key", "--timeout", "60",
        ]))
    }

    /// Opens the memo whose first line is `headline` from the list (it must be the only memo on it).
    private func open(_ headline: String, in tmux: TmuxSession) throws {
        try tmux.waitForScreen(containing: "> " + headline, "● ")
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "Memo", "e edit")
    }

    @Test func historyFollowsTheOtherTerminalRestoresLiveAndTheTrashBringsBackADeletedMemo() throws {
        let fixture = try FrontEndFixture()
        let memo = try fixture.add("장보기: 우유")
        let alice = try frontEnd(fixture, as: "alice")
        defer { alice.kill() }
        let bob = try frontEnd(fixture, as: "bob")
        defer { bob.kill() }

        // Alice opens the memo's history: one version, made by the fixture's `client` certificate.
        try open("장보기: 우유", in: alice)
        try alice.press("h")
        var screen = try alice.waitForScreen(containing: "History", "client", "created", "장보기: 우유")
        #expect(screen.contains { $0.hasPrefix("> r") && $0.contains("client") })

        // Bob edits it: Alice's history shows his version on top, without a key press.
        try open("장보기: 우유", in: bob)
        try bob.press("e")
        try bob.waitForScreen(containing: "Edit memo", "Ctrl-S")
        try bob.type(", 계란")
        try bob.press("C-s")
        try bob.waitForScreen(containing: "edited by bob", "장보기: 우유, 계란")
        screen = try alice.waitForScreen(containing: "bob", "edited", "장보기: 우유, 계란")
        // The selection stayed on the version Alice had selected (now the second line), the newest first.
        let bobLine = try #require(screen.firstIndex { $0.contains("bob") })
        let clientLine = try #require(screen.firstIndex { $0.contains("client") && $0.contains("created") })
        #expect(bobLine < clientLine)
        #expect(screen[clientLine].hasPrefix("> "), "\(screen)")

        // d shows the difference from the version before: the old line removed, the new one added.
        try alice.press("k")
        try alice.press("d")
        screen = try alice.waitForScreen(containing: "- 장보기: 우유", "+ 장보기: 우유, 계란")
        // (Each key waits for the screen: an Escape followed at once by j reads as Alt-j.)
        try alice.press("Escape")
        try alice.waitForScreen(containing: "History", "> r")
        try alice.press("j")
        try alice.waitForScreen("the first version selected") { lines in
            lines.contains { $0.hasPrefix("> r") && $0.contains("client") }
        }

        // Alice restores the first version (y/N, No by default): Bob's detail shows it at once, by alice.
        try alice.press("r")
        try alice.waitForScreen(containing: "restore revision", "y/N")
        try alice.press("Enter")
        try alice.waitForScreen("the question gone") { !$0.contains { $0.contains("y/N") } }
        try alice.press("r")
        try alice.waitForScreen(containing: "y/N")
        try alice.press("y")
        try alice.waitForScreen(containing: "restored revision")
        try alice.waitForScreen(containing: "alice", "restored", "장보기: 우유")
        try bob.waitForScreen("Bob's detail back at the first text") { lines in
            lines.contains { $0.hasPrefix("장보기: 우유") && !$0.contains("계란") }
                && lines.contains { $0.contains("edited by alice") }
        }
        #expect(try fixture.client("show", memo.id).out.trimmingCharacters(in: .newlines) == "장보기: 우유")

        // Bob deletes it: Alice's history (and the detail under it) go back to the list, saying why.
        try bob.press("d")
        try bob.waitForScreen(containing: "y/N")
        try bob.press("y")
        try alice.waitForScreen(containing: "deleted elsewhere")
        try alice.waitForScreen(containing: "Memos")

        // Alice's trash: the memo, deleted by bob; r brings it back and Bob's list shows it live.
        try alice.press("T")
        try alice.waitForScreen(containing: "Trash", "> 장보기: 우유", "deleted by bob")
        try alice.press("r")
        try alice.waitForScreen(containing: "bring back", "y/N")
        try alice.press("y")
        try alice.waitForScreen(containing: "brought back")
        try alice.waitForScreen(containing: "the trash is empty")
        try bob.waitForScreen(containing: "> 장보기: 우유")
        #expect(try fixture.client("show", memo.id).status == 0)

        // Back on the list and into the memo: the detail names who brought it back.
        try alice.press("Escape")
        try alice.waitForScreen(containing: "Memos")
        try open("장보기: 우유", in: alice)
        try alice.waitForScreen(containing: "edited by alice")
    }
}
