import Foundation
import MemoModel
@testable import MemoTUI
import MemoTestSupport
import MemoViewModels
import Testing

/// Copying a memo: the view models speak of text to copy; only the terminal layer knows the escape sequence.
@Suite("TUI clipboard: the detail asks to copy text, the terminal encodes OSC 52")
@FrontEnd
struct TUIClipboardTests {
    @Test func theCoordinatorPassesOnTheMemoTextWithoutAnyEscapeSequence() async throws {
        let store = TUIFixtures.store(["공유할 메모"])
        let coordinator = SceneCoordinator(storage: store, dateFormat: TUIFixtures.seoul)
        await FrontEnd.drained()
        let copied = Recorder<String>()
        let subscription = coordinator.clipboard.subscribe { copied.record($0) }
        defer {
            subscription.cancel()
            coordinator.stop()
        }
        coordinator.start()
        await FrontEnd.drained()
        guard case .list(let list) = coordinator.currentModel else { throw NavigationError.emptyStack }
        list.openSelected()
        await FrontEnd.drained()
        guard case .detail(let detail) = coordinator.currentModel else { throw NavigationError.emptyStack }
        detail.share()
        #expect(copied.values == ["공유할 메모"])
    }

    @Test func theTerminalWrapsTheTextInAnOSC52SequenceOfItsUTF8Bytes() {
        let base64 = Data("공유할 메모".utf8).base64EncodedString()
        #expect(Terminal.clipboardSequence(for: "공유할 메모") == "\u{1B}]52;c;\(base64)\u{07}")
        #expect(Terminal.clipboardSequence(for: "") == "\u{1B}]52;c;\u{07}")
    }
}
