import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoViewModels
import Testing

/// Issue 29: a save that someone else's edit made stale is merged by the store when the lines differ; where both
/// changed the same lines the conflict prompt offers `m`, the merge with git's marks to edit.
@Suite("Compose: stale saves merged by the store, and m, the merge with conflict marks")
@FrontEnd
struct ComposeMergeTests {
    private func rendered(_ editor: ComposeViewModel, strings: Strings = .english) -> [String] {
        var grid = Grid(width: 80, height: 24)
        ComposeView.draw(editor.current, mode: editor.mode, status: .local, strings: strings, into: &grid)
        return (0..<grid.height).map { grid.text(ofRow: $0) }
    }

    @Test func aSaveOfOtherLinesThanTheirEditIsMergedWithoutAPrompt() async throws {
        let store = MemoryStore()
        let memo = try await store.create(content: "title\none\ntwo\nthree\n", id: UUID(), insertDate: nil)
        let editor = ComposeViewModel(mode: .edit(memo), storage: store)
        editor.replaceText("title\none\ntwo\nTHREE\n")
        _ = try await store.update(id: memo.id, content: "title\nONE\ntwo\nthree\n", expectedRevision: memo.revision)
        await editor.save()?.value
        #expect(editor.current.conflict == nil)
        #expect(!editor.current.saving)
        #expect(Array(try await store.get(id: memo.id).content.utf8) == Array("title\nONE\ntwo\nTHREE\n".utf8))
    }

    @Test func overlappingEditsAskAndMPutsTheMergeWithMarksInTheEditorWhichThenSavesOverTheirs() async throws {
        let store = MemoryStore()
        let memo = try await store.create(content: "top\nline\nbottom\n", id: UUID(), insertDate: nil)
        let editor = ComposeViewModel(mode: .edit(memo), storage: store)
        editor.replaceText("top\nmine\nbottom\nmore\n")
        let theirs = try await store.update(id: memo.id, content: "TOP\nyours\nbottom\n", expectedRevision: nil)
        await editor.save()?.value
        #expect(editor.current.conflict?.theirs == theirs)
        #expect(rendered(editor).contains { $0.contains("o overwrite · k keep theirs · m merge · Esc keep editing") })

        #expect(editor.mergeWithTheirs())
        // The lines both changed (their first two, our second) are marked; our added last line merges.
        let marked = "<<<<<<< mine\ntop\nmine\n=======\nTOP\nyours\n>>>>>>> theirs, revision \(theirs.revision) by -\n"
            + "bottom\nmore\n"
        #expect(Array(editor.current.buffer.text.utf8) == Array(marked.utf8))
        #expect(editor.current.conflict == nil)
        #expect(editor.current.message == "1 conflict marked: edit between <<<<<<< and >>>>>>>, then Ctrl-S")
        #expect(editor.current.isDirty)

        // The edit now starts from their version: the save replaces it.
        editor.replaceText("TOP\nmine and yours\nbottom\nmore\n")
        await editor.save()?.value
        #expect(editor.current.conflict == nil)
        let saved = try await store.get(id: memo.id)
        #expect(saved.content == "TOP\nmine and yours\nbottom\nmore\n")
        #expect(saved.revision == theirs.revision + 1)
    }

    @Test func mergingAfterTheyDeletedItOffersNothing() async throws {
        let store = MemoryStore()
        let memo = try await store.create(content: "a\nb\n", id: UUID(), insertDate: nil)
        let editor = ComposeViewModel(mode: .edit(memo), storage: store)
        editor.replaceText("a\nB\n")
        _ = try await store.delete(id: memo.id, expectedRevision: nil)
        await editor.save()?.value
        #expect(editor.current.conflict != nil)
        #expect(editor.current.conflict?.theirs == nil)
        #expect(!editor.mergeWithTheirs())
        #expect(editor.current.buffer.text == "a\nB\n")
        #expect(!rendered(editor).contains { $0.contains("m merge") })
    }

    @Test func theMergeChoiceAndItsWordsAreInKoreanToo() async throws {
        let store = MemoryStore()
        let memo = try await store.create(content: "가\n나\n다\n", id: UUID(), insertDate: nil)
        let editor = ComposeViewModel(mode: .edit(memo), storage: store, strings: .korean)
        editor.replaceText("가\n우리\n다\n")
        let theirs = try await store.update(id: memo.id, content: "가\n그쪽\n다\n", expectedRevision: nil)
        await editor.save()?.value
        #expect(rendered(editor, strings: .korean).contains { $0.contains("m 합치기") })
        #expect(editor.mergeWithTheirs())
        #expect(editor.current.buffer.text.contains("<<<<<<< 내 편집\n우리\n=======\n그쪽\n>>>>>>> 그쪽, 리비전 \(theirs.revision) -\n"))
        #expect(editor.current.message == "충돌 1곳 표시: <<<<<<< 와 >>>>>>> 사이를 고친 뒤 Ctrl-S")
    }
}
