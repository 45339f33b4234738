import Foundation
import MemoDiff
import MemoModel
import MemoNet

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
    /// A save is on its way to the store (`saving…`); keys keep editing meanwhile.
    public var saving = false
    /// The save has had no answer within the save timeout: the "retry / keep as pending" question is on screen.
    public var saveTimedOut = false

    /// Decided on bytes: an editor that gives the text back in another normalization changed it.
    public var isDirty: Bool { !buffer.text.hasSameBytes(as: originalText) }
}

public enum ComposeEvent: Sendable, Hashable {
    /// The scene is done: with the memo saved, or nil when nothing was saved.
    case finished(saved: Memo?)
    /// The refused write the scene opened on (`ComposeMode.resolve`) is resolved: a save landed (overwrite, or
    /// the merged text) or the user kept theirs. Its not-saved entry has no more to do.
    case resolvedNotSaved(UUID)
}

/// The compose scene's model: a multi-line editor, save with a revision check, and the conflict choice.
///
/// A save never holds up the keys: Ctrl-S starts the store's write as a child task and returns; the scene shows
/// `saving…` and goes on editing. A save with no answer within `saveTimeout` says so and offers to retry (wait
/// again, or send again once it has failed) or to keep it as pending (the store keeps the write and sends it when
/// the server answers; the scene closes). Text typed while a save was under way is never dropped: when the save
/// lands the scene stays open on the saved memo with the newer text still to save.
@FrontEnd
public final class ComposeViewModel {
    public private(set) var mode: ComposeMode
    private let storage: any MemoStorage
    private let store: StateStore<ComposeState>
    /// The id a new memo gets, chosen once so that saving twice (a retry) cannot create two memos.
    private let draftID = UUID()
    public var state: Subject<ComposeState> { store.subject }
    public let events = Subject<ComposeEvent>()
    /// Creates or updates; the input is the content and the revision it must replace (nil: any).
    public let saveAction: Action<(content: String, expectedRevision: UInt64?, id: UUID?), Memo>
    public let strings: Strings
    /// How long a save may go unanswered before the scene says so.
    public let saveTimeout: Duration
    /// The save under way, if any (tests await it).
    public private(set) var saveTask: Task<Void, Never>?
    private var saveDeadline: TimerHandle?
    /// Bumped by every save, so that a timer of an earlier one does nothing.
    private var saveNumber = 0
    /// What to send again on retry after a save failed for lack of an answer.
    private var lastSave: (content: String, expectedRevision: UInt64?, id: UUID?)?
    /// The not-saved entry of the refused write this scene resolves, until a save lands or the user keeps theirs.
    private var unresolvedNotSaved: UUID?

    public init(
        mode: ComposeMode, storage: any MemoStorage, strings: Strings = .english, saveTimeout: Duration = .seconds(5)
    ) {
        self.mode = mode
        self.storage = storage
        self.strings = strings
        self.saveTimeout = saveTimeout
        var initial: ComposeState
        switch mode {
        case .create: initial = ComposeState(buffer: TextBuffer(), originalText: "")
        case .edit(let memo): initial = ComposeState(buffer: TextBuffer(memo.content), originalText: memo.content)
        case .resolve(let refusal):
            unresolvedNotSaved = refusal.notSavedID
            // Our text is nowhere else any more: it counts as unsaved, so Esc asks before dropping it.
            initial = ComposeState(buffer: TextBuffer(refusal.memo.content), originalText: "")
            initial.conflict = ComposeConflict(theirs: refusal.theirs)
            initial.message = refusal.theirs == nil ? strings.deletedMeanwhile : strings.changedMeanwhile
        }
        store = StateStore(initial)
        let draftID = draftID
        saveAction = Action { input in
            if let id = input.id {
                // Merged by the store when only other lines changed since (the server keeps the base).
                return try await storage.update(
                    id: id, content: input.content, expectedRevision: input.expectedRevision, merge: true)
            }
            return try await storage.create(content: input.content, id: draftID, insertDate: nil)
        }
    }

    public var current: ComposeState { store.value }

    /// Changes the text or moves the cursor (also while a save is under way).
    public func edit(_ change: (inout TextBuffer) -> Void) {
        store.update { state in
            change(&state.buffer)
            if !state.saving { state.message = nil }
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

    /// Ctrl-S: creates the memo, or updates it if it is still at the revision the edit started from. Returns at
    /// once; the write runs as a child task (`saveTask`).
    @discardableResult
    public func save() -> Task<Void, Never>? {
        guard !current.saving else { return saveTask }
        let content = current.buffer.text
        switch mode {
        case .create:
            if content.allSatisfy(\.isWhitespace) {
                store.update { $0.message = strings.emptyMemo }
                return nil
            }
            return start((content, nil, nil), memoID: nil)
        case .edit, .resolve:
            guard let memo = mode.editedMemo else { return nil }
            if !current.isDirty {
                events.send(.finished(saved: nil))
                return nil
            }
            return start((content, memo.revision, memo.id), memoID: memo.id)
        }
    }

    /// "Overwrite": saves over their version (or, when they deleted it, as a new memo).
    @discardableResult
    public func overwrite() -> Task<Void, Never>? {
        guard let conflict = current.conflict, let memo = mode.editedMemo, !current.saving else { return nil }
        let content = current.buffer.text
        store.update { $0.conflict = nil }
        if let theirs = conflict.theirs {
            return start((content, theirs.revision, theirs.id), memoID: memo.id)
        }
        return start((content, nil, nil), memoID: nil)
    }

    /// "Merge" (`m`): the editor's text becomes the line merge of the text the edit started from (the base), their
    /// version and ours (`LineMerge`, computed here: the server already merged what merges, so this is for the
    /// lines both changed), with git's marks around each region where both changed the same lines, labelled
    /// `strings.mergeOursLabel` and `strings.mergeTheirsLabel`. The edit then continues from their version: the
    /// next save replaces it (and conflicts again if it changes meanwhile). An edit refused on an offline replay
    /// has no base here: the merge is then two-way (lines both have kept once, the others marked).
    /// - Returns: false when there is nothing to merge with (they deleted it, or a save is under way).
    @discardableResult
    public func mergeWithTheirs() -> Bool {
        guard let conflict = current.conflict, let theirs = conflict.theirs, !current.saving else { return false }
        let base: String
        switch mode {
        case .edit(let memo): base = memo.content
        case .create, .resolve: base = ""
        }
        let result = LineMerge.merge(
            base: base, ours: current.buffer.text, theirs: theirs.content, oursLabel: strings.mergeOursLabel,
            theirsLabel: strings.mergeTheirsLabel(theirs.revision, theirs.author.description))
        store.update { state in
            state.conflict = nil
            state.buffer = TextBuffer(result.text)
            state.originalText = theirs.content
            switch result {
            case .clean: state.message = strings.mergedClean
            case .conflicts(_, let count): state.message = strings.mergedConflicts(count)
            }
        }
        mode = .edit(theirs)
        return true
    }

    /// "Keep theirs": drops this edit.
    public func keepTheirs() {
        guard current.conflict != nil else { return }
        store.update { $0.conflict = nil }
        resolvedNotSaved()
        events.send(.finished(saved: nil))
    }

    /// `r` at the timeout question: waits again for a save still under way, or sends a failed one again.
    @discardableResult
    public func retrySave() -> Task<Void, Never>? {
        guard current.saveTimedOut else { return nil }
        store.update { state in
            state.saveTimedOut = false
            state.message = strings.saving
        }
        if current.saving {
            armDeadline()
            return saveTask
        }
        guard let lastSave else { return nil }
        return start(lastSave, memoID: lastSave.id)
    }

    /// `p` at the timeout question: leaves the write to the store, which shows it as pending and sends it when the
    /// server answers. The scene closes, unless text was typed after Ctrl-S: then it stays open with that text
    /// (still to save) and takes the save's answer when it comes. A save that already failed has nothing to keep:
    /// `p` then only closes the question.
    public func keepPending() {
        guard current.saveTimedOut else { return }
        guard current.saving, let inFlight = lastSave?.content else {
            dismissTimeout()
            return
        }
        if current.buffer.text.hasSameBytes(as: inFlight) {
            store.update { $0.saveTimedOut = false }
            events.send(.finished(saved: nil))
        } else {
            store.update { state in
                state.saveTimedOut = false
                state.message = strings.savedPending
            }
        }
    }

    /// Esc at the timeout question: back to editing; the save goes on (its answer still lands here).
    public func dismissTimeout() {
        store.update { state in
            state.saveTimedOut = false
            state.message = state.saving ? strings.saving : nil
        }
    }

    private func start(_ input: (content: String, expectedRevision: UInt64?, id: UUID?), memoID: UUID?)
        -> Task<Void, Never>
    {
        lastSave = input
        store.update { state in
            state.saving = true
            state.saveTimedOut = false
            state.message = strings.saving
        }
        armDeadline()
        let task = Task { @FrontEnd [self] in
            let result = await saveAction.execute(input)
            await finishSaving(result, content: input.content, memoID: memoID)
        }
        saveTask = task
        return task
    }

    private func armDeadline() {
        saveDeadline?.cancel()
        saveNumber += 1
        let number = saveNumber
        saveDeadline = FrontEnd.loop.schedule(after: saveTimeout) { [weak self] in
            FrontEnd.assumeIsolated { self?.deadlinePassed(number) }
        }
    }

    private func deadlinePassed(_ number: Int) {
        guard number == saveNumber, current.saving, current.conflict == nil else { return }
        store.update { state in
            state.saveTimedOut = true
            state.confirmingCancel = false
            state.message = strings.saveTimedOut(saveTimeout.wholeSeconds)
        }
    }

    private func finishSaving(_ result: Result<Memo, any Error>, content: String, memoID: UUID?) async {
        saveDeadline?.cancel()
        saveDeadline = nil
        switch result {
        case .success(let memo):
            lastSave = nil
            // Confirmed by the server, or kept by the store to send later (offline: no revision yet).
            let message = memo.revision == 0 ? strings.savedPending : strings.saved
            let typedSince = !current.buffer.text.hasSameBytes(as: content)
            store.update { state in
                state.saving = false
                state.saveTimedOut = false
                state.conflict = nil
                state.originalText = content
                state.message = typedSince ? strings.savedTypedSince : message
            }
            resolvedNotSaved()
            if typedSince {
                // What was typed after Ctrl-S stays, as an edit of the memo just saved.
                mode = .edit(memo)
            } else {
                events.send(.finished(saved: memo))
            }
        case .failure(let error):
            if case ActionError.notEnabled = error { return }
            if let memoID, let memoError = error as? MemoError {
                switch memoError {
                case .conflict, .notFound:
                    let theirs = try? await storage.get(id: memoID)
                    store.update { state in
                        state.saving = false
                        state.saveTimedOut = false
                        state.conflict = ComposeConflict(theirs: theirs)
                        state.message = theirs == nil ? strings.deletedMeanwhile : strings.changedMeanwhile
                    }
                    return
                default:
                    break
                }
            }
            if Self.isTimeout(error) {
                // No answer: the text stays, and the choice stays offered.
                store.update { state in
                    state.saving = false
                    state.saveTimedOut = true
                    state.message = strings.saveTimedOut(saveTimeout.wholeSeconds)
                }
                return
            }
            lastSave = nil
            store.update { state in
                state.saving = false
                state.saveTimedOut = false
                state.message = strings.notSaved("\(error)")
            }
        }
    }

    /// Says once that the refused write this scene opened on needs its not-saved entry no more.
    private func resolvedNotSaved() {
        guard let id = unresolvedNotSaved else { return }
        unresolvedNotSaved = nil
        events.send(.resolvedNotSaved(id))
    }

    /// A failure that says the server did not answer (rather than that it refused).
    private static func isTimeout(_ error: any Error) -> Bool {
        if case MemoError.outcomeUnknown = error { return true }
        return false
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

extension Duration {
    /// Whole seconds, at least 1, for messages.
    var wholeSeconds: Int { max(1, Int(components.seconds)) }
}
