import ClientTestSupport
import Foundation
import MemoTestSupport
import ServerTestSupport
import Testing

/// Issue 29's "done when": two people edit different lines of one memo at once, from two terminals, and both
/// edits are kept with no prompt; when they edit the same line, the second to save is asked, and `m` gives the
/// merged text with conflict marks.
@Suite(
    "memo-client front ends under tmux: edits of one memo from two terminals merged", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUIMergeEndToEndTests {
    /// A front end on the memo's editor: the list, Enter for the detail, e for the editor.
    private func editor(_ fixture: FrontEndFixture) throws -> TmuxSession {
        let tmux = try TmuxSession(command: fixture.frontEndCommand(["--locale", "en_US"]))
        try tmux.waitForScreen(containing: "alpha", "live")
        try tmux.press("Enter")
        try tmux.waitForScreen(containing: "Memo", "bravo")
        try tmux.press("e")
        try tmux.waitForScreen(containing: "Edit memo", "Ctrl-S")
        return tmux
    }

    @Test func differentLinesFromTwoTerminalsAtOnceAreBothKeptWithNoPromptAndTheSameLineAsks() throws {
        let fixture = try FrontEndFixture()
        let memo = try fixture.add("alpha\nbravo\ncharlie\ndelta")
        let first = try editor(fixture)
        defer { first.kill() }
        let second = try editor(fixture)
        defer { second.kill() }

        // Both editors started from revision 1: the first edits the last line, the second the first line.
        try first.type(" by one")
        try second.press("Up", "Up", "Up", "End")
        try second.type(" by two")
        try second.waitForScreen(containing: "alpha by two", "modified")
        try first.waitForScreen(containing: "delta by one", "modified")
        try first.press("C-s")
        try first.waitForScreen(containing: "revision 2 · edited by")
        // The second saves a revision behind: merged by the server, saved, no question.
        try second.press("C-s")
        let merged = try second.waitForScreen(containing: "alpha by two", "delta by one", "revision 3 · edited by")
        #expect(!merged.contains { $0.contains("o overwrite") }, "\(merged)")
        let shown = try fixture.client("show", memo.id).out.trimmingCharacters(in: .newlines)
        #expect(Array(shown.utf8) == Array("alpha by two\nbravo\ncharlie\ndelta by one".utf8))
        // The first terminal's detail follows to the merged text.
        try first.waitForScreen(containing: "alpha by two")

        // Now both edit the same (last) line from the merged revision: the second to save is asked.
        try first.press("e")
        try first.waitForScreen(containing: "Edit memo", "Ctrl-S")
        try second.press("e")
        try second.waitForScreen(containing: "Edit memo", "Ctrl-S")
        try first.type(" and three")
        try second.type(" and four")
        try first.waitForScreen(containing: "delta by one and three")
        try second.waitForScreen(containing: "delta by one and four")
        try first.press("C-s")
        try first.waitForScreen(containing: "revision 4 · edited by")
        try second.press("C-s")
        try second.waitForScreen(containing: "o overwrite · k keep theirs · m merge")
        // m: the merge with the conflict marked, to edit.
        try second.press("m")
        let marked = try second.waitForScreen(containing: "<<<<<<< mine", "=======", ">>>>>>> theirs")
        #expect(marked.contains { $0 == "delta by one and four" }, "\(marked)")
        #expect(marked.contains { $0 == "delta by one and three" }, "\(marked)")
        #expect(try fixture.client("show", memo.id).out.trimmingCharacters(in: .newlines)
            == "alpha by two\nbravo\ncharlie\ndelta by one and three")
    }
}
