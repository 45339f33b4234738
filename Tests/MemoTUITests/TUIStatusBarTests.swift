import MemoTUI
import MemoText
import MemoViewModels
import Testing

/// The status bar's words for each connection state (one vocabulary: a state, and why in brackets), and the key
/// hints that must fit beside them on an 80-column terminal.
@Suite("TUI status bar: connection states and key hints")
@FrontEnd
struct TUIStatusBarTests {
    private func bar(
        _ state: LinkState, _ strings: Strings = .english, reason: LinkReason? = nil, width: Int = 80,
        hints: [KeyHint] = [KeyHint("q quit", 0)], problem: ConnectionProblem? = nil, pending: Int = 0
    ) -> String {
        var grid = Grid(width: width, height: 1)
        let ids = Set((0..<pending).map { TUIFixtures.id($0 + 1) })
        StatusBarView.draw(
            ConnectionStatus(server: "b.example:7420", state: state, pendingIDs: ids, problem: problem, reason: reason),
            hints: hints, strings: strings, into: &grid, row: 0)
        return grid.text(ofRow: 0)
    }

    @Test func aServerThatStoppedAnsweringIsSaidSoWithTheAttemptInEnglishAndKorean() {
        #expect(bar(.notAnswering(attempt: 3)).hasPrefix(
            " ◌ b.example:7420 · reconnecting (server not answering, try 3) │ q quit"))
        #expect(bar(.notAnswering(attempt: 3), .korean).hasPrefix(
            " ◌ b.example:7420 · 다시 연결 중 (서버 응답 없음, 3번째) │ q quit"))
        #expect(bar(.live).hasPrefix(" ● b.example:7420 · live │"))
    }

    @Test func everyStateThatIsNotLiveSaysWhyInBracketsWhenTheReasonIsKnown() {
        let refused = LinkReason.said("connection refused")
        #expect(bar(.offline, reason: refused).hasPrefix(" ○ b.example:7420 · offline (connection refused) │"))
        #expect(bar(.offline).hasPrefix(" ○ b.example:7420 · offline │"))
        #expect(bar(.offline, reason: .notAnswering).hasPrefix(" ○ b.example:7420 · offline (server not answering) │"))
        #expect(bar(.reconnecting(attempt: 2), reason: refused).hasPrefix(
            " ◌ b.example:7420 · reconnecting (connection refused, try 2) │"))
        #expect(bar(.reconnecting(attempt: 2)).hasPrefix(" ◌ b.example:7420 · reconnecting (try 2) │"))
        #expect(bar(.offline, .korean, reason: refused).hasPrefix(" ○ b.example:7420 · 오프라인 (connection refused) │"))
        // Live never carries a stale reason.
        #expect(bar(.live, reason: refused).hasPrefix(" ● b.example:7420 · live │"))
        // A reason retrying will not fix takes the state's place.
        let revoked = ConnectionProblem(kind: .certificateRevoked, detail: "certificate revoked: serial 0A")
        #expect(bar(.offline, reason: refused, problem: revoked).hasPrefix(
            " ✗ b.example:7420 · certificate revoked (? why) │"))
        // In the editor `?` is text: the bar names the key that works there.
        var grid = Grid(width: 80, height: 1)
        StatusBarView.draw(
            ConnectionStatus(server: "b.example:7420", state: .offline, problem: revoked),
            hints: Strings.english.composeHints, inEditor: true, into: &grid, row: 0)
        #expect(grid.text(ofRow: 0).hasPrefix(" ✗ certificate revoked (Ctrl-G why) │ Ctrl-S save"), "\(grid.textDump)")
    }

    @Test func atEightyColumnsTheMainKeysAndHelpFitBesideTheLongestStatus() {
        let longest = { (hints: [KeyHint], strings: Strings) in
            self.bar(
                .notAnswering(attempt: 12), strings, width: 80, hints: hints, pending: 12)
        }
        for strings in [Strings.english, .korean] {
            let scenes = [
                strings.listHints, strings.listHintsReadOnly, strings.detailHints, strings.detailHintsReadOnly,
                strings.composeHints,
            ]
            for hints in scenes {
                let line = longest(hints, strings)
                #expect(line.columns == 80, "\(line)")
                for hint in hints where hint.priority == 0 {
                    #expect(line.contains(hint.text), "\(hint.text) missing from: \(line)")
                }
                #expect(!line.hasSuffix("…") && !line.contains("q …"), "\(line)")
            }
        }
        // The status gives up the server's name before any of those, and still says the state.
        let list = bar(.notAnswering(attempt: 3), width: 80, hints: Strings.english.listHints, pending: 2)
        #expect(list.hasPrefix(" ◌ reconnecting (server not answering, try 3) · 2 pending │ "), "\(list)")
        #expect(list.contains("n new") && list.contains("? help") && list.contains("q quit"), "\(list)")
        // With a short status the hints fit as room allows, the least needed (j/k) going first, in the scene's
        // order; on a wide terminal all of them.
        let live = bar(.live, width: 80, hints: Strings.english.listHints)
        #expect(live.hasSuffix("│ Enter open  n new  d delete  / filter  ? help  q quit"), "\(live)")
        let wide = bar(.live, width: 100, hints: Strings.english.listHints)
        #expect(wide.contains("│ j/k move  Enter open  n new  d delete  / filter  ? help  q quit"), "\(wide)")
    }
}
