import Foundation
import MemoCore

/// What the compose scene writes: a new memo, or a new version of one.
public enum ComposeMode: Sendable, Hashable {
    case create
    /// Edits this memo; the save expects the memo still to be at its revision.
    case edit(Memo)
    /// An edit made offline that the server refused as a conflict when it was sent: the editor opens on our text
    /// with the same choice an online conflict offers.
    case resolve(WriteRefusal)

    /// The memo being edited, at the revision the edit started from; nil for a new memo.
    public var editedMemo: Memo? {
        switch self {
        case .create: return nil
        case .edit(let memo): return memo
        case .resolve(let refusal):
            var memo = refusal.memo
            memo.revision = refusal.baseRevision ?? 0
            return memo
        }
    }
}

/// Someone else changed (or deleted) the memo while it was being edited.
public struct ComposeConflict: Sendable, Hashable {
    /// Their version; nil when they deleted it.
    public var theirs: Memo?

    public init(theirs: Memo?) {
        self.theirs = theirs
    }
}

/// What the compose scene shows.
public struct ComposeState: Sendable, Hashable {
    public var buffer: TextBuffer
    /// The text the editor started with, to tell whether there is anything to lose.
    public var originalText: String
    /// Set when a save met someone else's change: the user picks "overwrite" or "keep theirs".
    public var conflict: ComposeConflict?
    /// The "discard changes? y/N" question is on screen.
    public var confirmingCancel = false
    public var message: String?
    /// The help box is on screen.
    public var helpVisible = false

    /// Decided on bytes: an editor that gives the text back in another normalization changed it.
    public var isDirty: Bool { !buffer.text.hasSameBytes(as: originalText) }
}

public enum ComposeEvent: Sendable, Hashable {
    /// The scene is done: with the memo saved, or nil when nothing was saved.
    case finished(saved: Memo?)
}

/// The seeds' compose scene: a multi-line editor, save with a revision check, and the conflict choice.
public final class ComposeViewModel: Sendable {
    public let mode: ComposeMode
    private let storage: any MemoStorage
    private let store: StateStore<ComposeState>
    /// The id a new memo gets, chosen once so that saving twice (a retry) cannot create two memos.
    private let draftID = UUID()
    public var state: Subject<ComposeState> { store.subject }
    public let events = Subject<ComposeEvent>()
    /// Creates or updates; the input is the content and the revision it must replace (nil: any).
    public let saveAction: Action<(content: String, expectedRevision: UInt64?, id: UUID?), Memo>
    public let strings: Strings

    public init(mode: ComposeMode, storage: any MemoStorage, strings: Strings = .english) {
        self.mode = mode
        self.storage = storage
        self.strings = strings
        var initial: ComposeState
        switch mode {
        case .create: initial = ComposeState(buffer: TextBuffer(), originalText: "")
        case .edit(let memo): initial = ComposeState(buffer: TextBuffer(memo.content), originalText: memo.content)
        case .resolve(let refusal):
            // Our text is nowhere else any more: it counts as unsaved, so Esc asks before dropping it.
            initial = ComposeState(buffer: TextBuffer(refusal.memo.content), originalText: "")
            initial.conflict = ComposeConflict(theirs: refusal.theirs)
            initial.message = refusal.theirs == nil ? strings.deletedMeanwhile : strings.changedMeanwhile
        }
        store = StateStore(initial)
        let draftID = draftID
        saveAction = Action { input in
            if let id = input.id {
                return try await storage.update(id: id, content: input.content, expectedRevision: input.expectedRevision)
            }
            return try await storage.create(content: input.content, id: draftID, insertDate: nil)
        }
    }

    public var current: ComposeState { store.value }

    /// Changes the text or moves the cursor.
    public func edit(_ change: (inout TextBuffer) -> Void) {
        store.update { state in
            change(&state.buffer)
            state.message = nil
        }
    }

    /// Replaces the whole text (what $EDITOR gave back), cursor at the end.
    public func replaceText(_ text: String) {
        store.update { state in state.buffer = TextBuffer(text) }
    }

    /// Puts a one-line message under the text (the external editor could not run).
    public func show(message: String) { store.update { $0.message = message } }

    /// Ctrl-G: shows or hides the box of the editor's keys.
    public func toggleHelp() { store.update { $0.helpVisible.toggle() } }

    // MARK: Saving

    /// Ctrl-S: creates the memo, or updates it if it is still at the revision the edit started from.
    public func save() async {
        let content = current.buffer.text
        switch mode {
        case .create:
            if content.allSatisfy(\.isWhitespace) {
                store.update { $0.message = strings.emptyMemo }
                return
            }
            await finishSaving(saveAction.execute((content, nil, nil)), memoID: nil)
        case .edit, .resolve:
            guard let memo = mode.editedMemo else { return }
            if !current.isDirty {
                events.send(.finished(saved: nil))
                return
            }
            await finishSaving(saveAction.execute((content, memo.revision, memo.id)), memoID: memo.id)
        }
    }

    /// "Overwrite": saves over their version (or, when they deleted it, as a new memo).
    public func overwrite() async {
        guard let conflict = current.conflict, let memo = mode.editedMemo else { return }
        let content = current.buffer.text
        if let theirs = conflict.theirs {
            await finishSaving(saveAction.execute((content, theirs.revision, theirs.id)), memoID: memo.id)
        } else {
            await finishSaving(saveAction.execute((content, nil, nil)), memoID: nil)
        }
    }

    /// "Keep theirs": drops this edit.
    public func keepTheirs() {
        guard current.conflict != nil else { return }
        store.update { $0.conflict = nil }
        events.send(.finished(saved: nil))
    }

    private func finishSaving(_ result: Result<Memo, any Error>, memoID: UUID?) async {
        switch result {
        case .success(let memo):
            store.update { state in
                state.conflict = nil
                state.originalText = state.buffer.text
                state.message = strings.saved
            }
            events.send(.finished(saved: memo))
        case .failure(let error):
            if let memoID, let memoError = error as? MemoError {
                switch memoError {
                case .conflict, .notFound:
                    let theirs = try? await storage.get(id: memoID)
                    store.update { state in
                        state.conflict = ComposeConflict(theirs: theirs)
                        state.message = theirs == nil ? strings.deletedMeanwhile : strings.changedMeanwhile
                    }
                    return
                default:
                    break
                }
            }
            if case ActionError.notEnabled = error { return }
            store.update { $0.message = strings.notSaved("\(error)") }
        }
    }

    // MARK: Cancelling

    /// Esc: leaves at once when nothing changed, otherwise asks first. During a conflict it only closes the
    /// question and goes back to editing, so that no text is lost by a stray Esc.
    public func cancel() {
        if current.conflict != nil {
            store.update { $0.conflict = nil }
            return
        }
        if current.isDirty {
            store.update { $0.confirmingCancel = true }
        } else {
            events.send(.finished(saved: nil))
        }
    }

    /// The answer to "discard changes? y/N".
    public func answerCancel(_ discard: Bool) {
        store.update { $0.confirmingCancel = false }
        if discard { events.send(.finished(saved: nil)) }
    }
}
