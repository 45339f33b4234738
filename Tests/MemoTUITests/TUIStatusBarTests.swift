import MemoTUI
import MemoViewModels
import Testing

/// The status bar's words for each connection state, the not-answering one especially: a server that stopped
/// answering is told apart from one that refused or dropped the connection.
@Suite("TUI status bar: connection states")
@FrontEnd
struct TUIStatusBarTests {
    private func bar(_ state: LinkState, _ strings: Strings = .english, width: Int = 80) -> String {
        var grid = Grid(width: width, height: 1)
        StatusBarView.draw(
            ConnectionStatus(server: "b.example:7420", state: state), hints: "q quit", strings: strings,
            into: &grid, row: 0)
        return grid.text(ofRow: 0)
    }

    @Test func aServerThatStoppedAnsweringIsSaidSoInEnglishAndKorean() {
        #expect(bar(.notAnswering).hasPrefix(" ◌ b.example:7420 · reconnecting (server not answering) │ q quit"))
        #expect(bar(.notAnswering, .korean).hasPrefix(" ◌ b.example:7420 · 다시 연결 중 (서버 응답 없음) │ q quit"))
        // The other states keep their words.
        #expect(bar(.reconnecting(attempt: 2)).hasPrefix(" ◌ b.example:7420 · reconnecting (2) │"))
        #expect(bar(.live).hasPrefix(" ● b.example:7420 · live │"))
    }
}
