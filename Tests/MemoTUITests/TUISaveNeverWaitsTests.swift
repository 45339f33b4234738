import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import Synchronization
import Testing

/// A memory store whose writes wait at a gate until the test opens it: a server that does not answer, or answers
/// late, with the real store behind it. Reads and the list are the memory store's.
final class GatedStorage: MemoStorage {
    private let inner: MemoryStore
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let failing = Mutex<MemoError?>(nil)

    init(_ inner: MemoryStore) { self.inner = inner }

    /// How many writes wait at the gate.
    var waitingWrites: Int { waiting.withLock { $0.count } }

    /// Lets every waiting write through (to the store, or failing with `error`).
    func open(failingWith error: MemoError? = nil) {
        failing.withLock { $0 = error }
        let all = waiting.withLock { all in
            defer { all = [] }
            return all
        }
        all.forEach { $0.resume() }
    }

    private func gate() async throws {
        await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
        if let error = failing.withLock({ $0 }) { throw error }
    }

    func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo {
        try await gate()
        return try await inner.create(content: content, id: id, insertDate: insertDate)
    }

    func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo {
        try await gate()
        return try await inner.update(id: id, content: content, expectedRevision: expectedRevision)
    }

    func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo {
        try await gate()
        return try await inner.delete(id: id, expectedRevision: expectedRevision)
    }

    func get(id: UUID) async throws -> Memo { try await inner.get(id: id) }
    func memoList() -> Subject<[Memo]> { inner.memoList() }
    func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription { inner.watchList(handler) }
}

/// A save is a child task of its scene: keys keep editing while it waits, a save with no answer in time says so and
/// keeps the text, and nothing typed meanwhile is lost.
@Suite("TUI: a save never holds up the keys")
@FrontEnd
struct TUISaveNeverWaitsTests {
    /// Waits (on the front end, without holding it) until `condition` holds.
    private func until(_ what: String, seconds: Double = 20, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw ClientTestTimeout(what: what) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func keysTypedWhileASaveWaitsEditTheTextAndAreKeptWhenTheSaveLands() async throws {
        let memory = TUIFixtures.store([])
        let store = GatedStorage(memory)
        let compose = ComposeViewModel(mode: .create, storage: store, saveTimeout: .seconds(60))
        let events = Recorder<ComposeEvent>()
        let subscription = compose.events.subscribe { events.record($0) }
        defer { subscription.cancel() }
        _ = await ComposeView.handle(.paste("첫 줄"), model: compose)
        // Ctrl-S returns at once: the write waits at the gate, the scene says so, and keys still edit.
        _ = await ComposeView.handle(.control("s"), model: compose)
        #expect(compose.current.saving)
        #expect(compose.current.message == "saving…")
        for key in [Key.enter, .character("더"), .character("!")] { _ = await ComposeView.handle(key, model: compose) }
        #expect(compose.current.buffer.text == "첫 줄\n더!")
        try await until("the write at the gate") { store.waitingWrites == 1 }
        #expect(memory.snapshot().memos.isEmpty)

        store.open()
        await compose.saveTask?.value
        // Saved what Ctrl-S saw; the newer text stays on screen as an edit of that memo, still to save.
        let saved = try #require(memory.snapshot().memos.first)
        #expect(saved.content == "첫 줄")
        #expect(events.values.isEmpty)
        #expect(!compose.current.saving)
        #expect(compose.current.buffer.text == "첫 줄\n더!")
        #expect(compose.current.isDirty)
        #expect(compose.current.message == "saved; what you typed since is not saved yet")
        #expect(compose.mode == .edit(saved))
        // The second Ctrl-S updates that memo (no second memo).
        compose.save()
        try await until("the second write at the gate") { store.waitingWrites == 1 }
        store.open()
        await compose.saveTask?.value
        #expect(memory.snapshot().memos.map(\.content) == ["첫 줄\n더!"])
        #expect(events.values.count == 1)
    }

    @Test func aSaveWithNoAnswerInTimeSaysSoKeepsTheTextAndOffersRetryOrPending() async throws {
        let memory = TUIFixtures.store([])
        let store = GatedStorage(memory)
        let compose = ComposeViewModel(mode: .create, storage: store, saveTimeout: .milliseconds(200))
        let events = Recorder<ComposeEvent>()
        let subscription = compose.events.subscribe { events.record($0) }
        defer { subscription.cancel() }
        compose.edit { $0.insert(text: "답이 없는 저장") }
        compose.save()
        // The deadline is a timer on the front end's loop: it fires while the write still waits.
        try await until("the timeout question") { compose.current.saveTimedOut }
        #expect(compose.current.message == "save timed out: no answer from the server in 1 s; your text is kept")
        #expect(compose.current.buffer.text == "답이 없는 저장")
        let grid = SceneView.render(.compose(compose), status: .local, width: 80, height: 10)
        let rows = (0..<grid.height).map { grid.text(ofRow: $0) }
        #expect(rows.contains { $0.contains("r retry · p keep as pending · Esc keep editing") }, "\(rows)")
        #expect(rows.contains { $0.contains("save timed out") }, "\(rows)")
        // Other keys do not type into the text while the question is up; r waits again.
        _ = await ComposeView.handle(.character("x"), model: compose)
        #expect(compose.current.buffer.text == "답이 없는 저장")
        _ = await ComposeView.handle(.character("r"), model: compose)
        #expect(!compose.current.saveTimedOut)
        #expect(compose.current.message == "saving…")
        try await until("the timeout question again") { compose.current.saveTimedOut }
        // p: the write is left to the store and the scene closes; the write lands when the server answers.
        _ = await ComposeView.handle(.character("p"), model: compose)
        #expect(events.values == [.finished(saved: nil)])
        store.open()
        await compose.saveTask?.value
        #expect(memory.snapshot().memos.map(\.content) == ["답이 없는 저장"])
    }

    @Test func aSaveWhoseOutcomeIsUnknownKeepsTheTextAndRetriesWithTheSameID() async throws {
        let memory = TUIFixtures.store([])
        let store = GatedStorage(memory)
        let compose = ComposeViewModel(mode: .create, storage: store, saveTimeout: .seconds(60))
        compose.edit { $0.insert(text: "다시 보낼 메모") }
        compose.save()
        try await until("the write at the gate") { store.waitingWrites == 1 }
        store.open(failingWith: .outcomeUnknown("no answer came"))
        await compose.saveTask?.value
        #expect(compose.current.saveTimedOut)
        #expect(!compose.current.saving)
        #expect(compose.current.buffer.text == "다시 보낼 메모")
        // r sends it again (the same draft id: a retry cannot make two memos).
        _ = await ComposeView.handle(.character("r"), model: compose)
        try await until("the retried write at the gate") { store.waitingWrites == 1 }
        store.open()
        await compose.saveTask?.value
        #expect(memory.snapshot().memos.map(\.content) == ["다시 보낼 메모"])
        #expect(compose.current.message == "saved")
    }

    @Test func aDeleteInTheListRunsAsAChildTaskAndTheListKeepsTakingKeys() async throws {
        let memory = TUIFixtures.store(["하나", "둘", "셋"])
        let store = GatedStorage(memory)
        let list = ListViewModel(storage: store)
        defer { list.close() }
        await FrontEnd.drained()
        _ = await ListView.handle(.character("d"), model: list)
        _ = await ListView.handle(.character("y"), model: list)
        try await until("the delete at the gate") { store.waitingWrites == 1 }
        // The list still moves while the delete waits.
        _ = await ListView.handle(.character("j"), model: list)
        #expect(list.current.selectedMemo?.content == "둘")
        store.open()
        await list.deleteTask?.value
        await FrontEnd.drained()
        #expect(memory.snapshot().memos.map(\.content) == ["둘", "하나"])
        #expect(list.current.message == "deleted")
    }
}
