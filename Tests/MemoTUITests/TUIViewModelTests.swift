import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import Testing

@Suite("TUI view models: list and detail against the memory store")
@FrontEnd
struct TUIViewModelTests {
    @Test func theListIsNewestFirstAndSelectionFollowsTheMemoThroughChanges() async throws {
        let store = TUIFixtures.store(["하나", "둘", "셋", "넷"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        #expect(list.current.visible.map(\.content) == ["넷", "셋", "둘", "하나"])
        list.moveDown(by: 2)
        #expect(list.current.selectedMemo?.content == "둘")
        let selected = try #require(list.current.selectedID)

        _ = try await store.create(content: "다섯", id: nil, insertDate: nil)
        await FrontEnd.drained()
        #expect(list.current.visible.first?.content == "다섯")
        #expect(list.current.selectedID == selected)
        #expect(list.current.selectedIndex == 3)

        _ = try await store.update(id: TUIFixtures.id(4), content: "넷 (고침)", expectedRevision: nil)
        await FrontEnd.drained()
        _ = try await store.delete(id: TUIFixtures.id(3), expectedRevision: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedID == selected)
        #expect(list.current.visible.map(\.content) == ["다섯", "넷 (고침)", "둘", "하나"])
        list.close()
    }

    @Test func deletingTheSelectedMemoSelectsItsNeighbour() async throws {
        let store = TUIFixtures.store(["하나", "둘", "셋"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        list.moveDown()
        #expect(list.current.selectedMemo?.content == "둘")
        _ = try await store.delete(id: TUIFixtures.id(2), expectedRevision: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedMemo?.content == "하나")
        _ = try await store.delete(id: TUIFixtures.id(1), expectedRevision: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedMemo?.content == "셋")
        _ = try await store.delete(id: TUIFixtures.id(3), expectedRevision: nil)
        await FrontEnd.drained()
        #expect(list.current.selectedID == nil)
        list.close()
    }

    @Test func theFilterIsACaseInsensitiveSubstringAndEscClearsIt() async {
        let store = TUIFixtures.store(["RxSwift 메모", "장보기", "rxswift 스터디"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        list.beginFilter()
        for character in "RXSW" { list.editFilter { $0.insert(character) } }
        #expect(list.current.visible.map(\.content) == ["rxswift 스터디", "RxSwift 메모"])
        #expect(list.current.selectedMemo?.content == "rxswift 스터디")
        list.editFilter { $0.backspace() }
        list.commitFilter()
        #expect(!list.current.isEditingFilter)
        #expect(list.current.visible.count == 2)
        list.clearFilter()
        #expect(list.current.visible.count == 3)
        #expect(list.current.filter.text.isEmpty)
        list.close()
    }

    @Test func deleteAsksFirstAndNoIsTheDefault() async throws {
        let store = TUIFixtures.store(["하나", "둘"])
        let list = ListViewModel(storage: store)
        await FrontEnd.drained()
        list.requestDelete()
        #expect(list.current.pendingDelete?.content == "둘")
        await list.answerDelete(false)?.value
        #expect(list.current.pendingDelete == nil)
        #expect(store.snapshot().memos.count == 2)
        // Through the key bindings: any key but y keeps it, y deletes it.
        _ = await ListView.handle(.character("d"), model: list)
        _ = await ListView.handle(.enter, model: list)
        #expect(store.snapshot().memos.count == 2)
        _ = await ListView.handle(.character("d"), model: list)
        _ = await ListView.handle(.character("y"), model: list)
        await list.deleteTask?.value
        #expect(store.snapshot().memos.map(\.content) == ["하나"])
        #expect(list.current.message == "deleted")
        list.close()
    }

    @Test func theDateReadsLikeTheSeedsInKorean() {
        let date = Date(unixMicros: TUIFixtures.baseMicros)
        #expect(TUIFixtures.utcKorean.string(from: date) == "2026. 11. 30. 오전 3:26:13")
        #expect(TUIFixtures.seoul.string(from: date) == "2026. 11. 30. 오후 12:26:13")
        let posix = MemoDateFormat(locale: Locale(identifier: "en_US_POSIX"), timeZone: TimeZone(identifier: "UTC")!)
        #expect(posix.string(from: date).contains("3:26:13"))
        #expect(MemoDateFormat.locale(fromEnvironment: ["LANG": "ko_KR.UTF-8"]).identifier == "ko_KR")
        #expect(MemoDateFormat.locale(fromEnvironment: ["LC_ALL": "C", "LANG": "ko_KR.UTF-8"]).identifier
            == "en_US_POSIX")
        #expect(MemoDateFormat.locale(fromEnvironment: [:]).identifier == "en_US_POSIX")
    }

    @Test func theDetailShowsAnEditByAnyoneAtOnce() async throws {
        let store = TUIFixtures.store(["처음 내용"])
        let detail = DetailViewModel(memoID: TUIFixtures.id(1), storage: store, dateFormat: TUIFixtures.utcKorean)
        await FrontEnd.drained()
        let contents = Recorder<[String]>()
        let subscription = detail.state.subscribe { contents.record($0.contents) }
        #expect(detail.current.contents == [
            "처음 내용", "2026. 11. 30. 오전 3:27:13", "revision 1 · updated 2026. 11. 30. 오전 3:27:13",
        ])
        _ = try await store.update(id: TUIFixtures.id(1), content: "고친 내용", expectedRevision: nil)
        await FrontEnd.drained()
        #expect(detail.current.contents.first == "고친 내용")
        // The revision and update date follow the edit.
        #expect(detail.current.contents.last == "revision 2 · updated 2026. 11. 30. 오전 3:28:13")
        #expect(contents.values.last?.first == "고친 내용")
        subscription.cancel()
        detail.close()
    }

    @Test func theDetailSaysWhenTheMemoIsDeletedElsewhere() async throws {
        let store = TUIFixtures.store(["지워질 메모"])
        let detail = DetailViewModel(memoID: TUIFixtures.id(1), storage: store, dateFormat: TUIFixtures.utcKorean)
        await FrontEnd.drained()
        let events = Recorder<DetailEvent>()
        let subscription = detail.events.subscribe { events.record($0) }
        _ = try await store.delete(id: TUIFixtures.id(1), expectedRevision: nil)
        await FrontEnd.drained()
        #expect(events.values == [.gone(deletedHere: false)])
        #expect(detail.current.isGone)
        detail.edit()
        #expect(events.values.count == 1)
        subscription.cancel()
        detail.close()
    }

    @Test func shareAsksToCopyTheContentAndSaysSoAndSaveWritesAFile() async throws {
        let store = TUIFixtures.store(["공유할 메모"])
        let detail = DetailViewModel(memoID: TUIFixtures.id(1), storage: store, dateFormat: TUIFixtures.utcKorean)
        await FrontEnd.drained()
        let events = Recorder<DetailEvent>()
        let subscription = detail.events.subscribe { events.record($0) }
        detail.share()
        #expect(events.values == [.copy("공유할 메모")])
        #expect(detail.current.message == "copied to the clipboard")

        detail.beginSave()
        #expect(detail.current.savePrompt?.text == "./memo-00000000.txt")
        let directory = try TemporaryDirectory()
        let path = directory.path + "/saved.txt"
        let written = await detail.confirmSave(to: path)
        #expect(written == path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "공유할 메모")
        #expect(detail.current.message == "saved to \(path)")
        #expect(detail.current.savePrompt == nil)
        subscription.cancel()
        detail.close()
    }
}
