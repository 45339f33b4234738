import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import Testing

@Suite("TUI compose: the editor model, saving and conflicts")
@FrontEnd
struct TUIComposeTests {
    @Test func koreanTextMovesTheScreenCursorTwoColumnsPerSyllable() {
        var buffer = TextBuffer()
        buffer.insert(text: "한글 abc")
        #expect(buffer.column == 6)
        #expect(buffer.cursorScreenColumn == 8)
        buffer.moveToLineStart()
        buffer.moveRight()
        #expect(buffer.cursorScreenColumn == 2)
        buffer.insert("가")
        #expect(buffer.text == "한가글 abc")
        #expect(buffer.cursorScreenColumn == 4)
        // A combining mark joins the grapheme before it and does not move the cursor.
        buffer.moveToLineEnd()
        buffer.insert("e")
        buffer.insert("\u{301}")
        #expect(buffer.lines[0].last == "é")
        #expect(buffer.cursorScreenColumn == 11)
    }

    @Test func newlinesBackspaceAndDeleteSplitAndJoinLines() {
        var buffer = TextBuffer("첫째 줄")
        buffer.insertNewline()
        buffer.insert(text: "둘째\n셋째")
        #expect(buffer.lines.count == 3)
        #expect(buffer.row == 2)
        buffer.moveToLineStart()
        buffer.backspace()
        #expect(buffer.text == "첫째 줄\n둘째셋째")
        #expect(buffer.cursorScreenColumn == 4)
        buffer.moveUp()
        buffer.moveToLineEnd()
        buffer.deleteForward()
        #expect(buffer.text == "첫째 줄둘째셋째")
    }

    @Test func upAndDownKeepTheScreenColumnAcrossWideAndNarrowLines() {
        var buffer = TextBuffer("abcdef\n가나다\nxy")
        buffer.moveUp()
        buffer.moveUp()
        buffer.moveToLineStart()
        for _ in 0..<4 { buffer.moveRight() }
        #expect(buffer.cursorScreenColumn == 4)
        buffer.moveDown()
        #expect(buffer.column == 2)
        #expect(buffer.cursorScreenColumn == 4)
        buffer.moveDown()
        #expect(buffer.column == 2)
        buffer.moveUp()
        buffer.moveUp()
        #expect(buffer.column == 4)
    }

    @Test func theLayoutWrapsWithoutSplittingSyllablesAndPlacesTheCursor() {
        var buffer = TextBuffer("가나다라마")
        let layout = buffer.layout(width: 5)
        #expect(layout.lines.map(\.text) == ["가나", "다라", "마"])
        #expect(layout.cursorLine == 2)
        #expect(layout.cursorColumn == 2)
        buffer.moveToLineStart()
        buffer.moveRight()
        buffer.moveRight()
        let middle = buffer.layout(width: 5)
        #expect(middle.cursorLine == 1)
        #expect(middle.cursorColumn == 0)
        // After a full last line the cursor goes to a new screen line, never past the width.
        let full = TextBuffer("가나").layout(width: 4)
        #expect(full.cursorLine == 1)
        #expect(full.cursorColumn == 0)
    }

    @Test func savingANewMemoCreatesItOnceAndEmptyMemosAreRefused() async throws {
        let store = TUIFixtures.store([])
        let compose = ComposeViewModel(mode: .create, storage: store)
        let events = Recorder<ComposeEvent>()
        let subscription = compose.events.subscribe { events.record($0) }
        await compose.save()?.value
        #expect(compose.current.message == "the memo is empty; nothing to save")
        #expect(events.values.isEmpty)
        _ = await ComposeView.handle(.paste("오늘 할 일\n메모 앱 완성"), model: compose)
        _ = await ComposeView.handle(.control("s"), model: compose)
        await compose.saveTask?.value
        let memos = store.snapshot().memos
        #expect(memos.map(\.content) == ["오늘 할 일\n메모 앱 완성"])
        #expect(events.values == [.finished(saved: memos[0])])
        subscription.cancel()
    }

    @Test func anEditThatMetAnotherEditCanOverwriteIt() async throws {
        let store = TUIFixtures.store(["원래 내용"])
        let original = try await store.get(id: TUIFixtures.id(1))
        let compose = ComposeViewModel(mode: .edit(original), storage: store)
        compose.edit { $0.insert(text: " + 내 수정") }
        let theirs = try await store.update(id: original.id, content: "그들의 수정", expectedRevision: nil)
        await FrontEnd.drained()
        await compose.save()?.value
        #expect(compose.current.conflict == ComposeConflict(theirs: theirs))
        #expect(try await store.get(id: original.id).content == "그들의 수정")
        let events = Recorder<ComposeEvent>()
        let subscription = compose.events.subscribe { events.record($0) }
        _ = await ComposeView.handle(.character("o"), model: compose)
        await compose.saveTask?.value
        let saved = try await store.get(id: original.id)
        #expect(saved.content == "원래 내용 + 내 수정")
        #expect(events.values == [.finished(saved: saved)])
        #expect(compose.current.conflict == nil)
        subscription.cancel()
    }

    @Test func anEditThatMetAnotherEditCanKeepTheirs() async throws {
        let store = TUIFixtures.store(["원래 내용"])
        let original = try await store.get(id: TUIFixtures.id(1))
        let compose = ComposeViewModel(mode: .edit(original), storage: store)
        compose.edit { $0.insert(text: " + 내 수정") }
        _ = try await store.update(id: original.id, content: "그들의 수정", expectedRevision: nil)
        await FrontEnd.drained()
        await compose.save()?.value
        #expect(compose.current.conflict != nil)
        let events = Recorder<ComposeEvent>()
        let subscription = compose.events.subscribe { events.record($0) }
        _ = await ComposeView.handle(.character("k"), model: compose)
        #expect(events.values == [.finished(saved: nil)])
        #expect(try await store.get(id: original.id).content == "그들의 수정")
        subscription.cancel()
    }

    @Test func cancellingAsksOnlyWhenThereAreUnsavedChanges() {
        let store = TUIFixtures.store([])
        let clean = ComposeViewModel(mode: .create, storage: store)
        let cleanEvents = Recorder<ComposeEvent>()
        let first = clean.events.subscribe { cleanEvents.record($0) }
        clean.cancel()
        #expect(cleanEvents.values == [.finished(saved: nil)])

        let dirty = ComposeViewModel(mode: .create, storage: store)
        let dirtyEvents = Recorder<ComposeEvent>()
        let second = dirty.events.subscribe { dirtyEvents.record($0) }
        dirty.edit { $0.insert("글") }
        dirty.cancel()
        #expect(dirty.current.confirmingCancel)
        dirty.answerCancel(false)
        #expect(dirtyEvents.values.isEmpty)
        #expect(dirty.current.buffer.text == "글")
        dirty.cancel()
        dirty.answerCancel(true)
        #expect(dirtyEvents.values == [.finished(saved: nil)])
        first.cancel()
        second.cancel()
    }
}
