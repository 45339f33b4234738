import Foundation
import MemoModel
/// What the detail scene shows.
public struct DetailState: Sendable, Hashable {
    /// The memo as the store last sent it; nil before it was seen.
    public var memo: Memo?
    /// What the scene shows, line by line: the memo's text, then its insert date, then its revision and update date.
    public var contents: [String] = []
    /// True once the memo is no longer in the store.
    public var isGone = false
    /// The y/N question about deleting is on screen.
    public var confirmingDelete = false
    /// The "save to file" prompt with its path, while on screen.
    public var savePrompt: LineInput?
    /// The file the save would replace, while "overwrite it? y/N" is on screen.
    public var confirmingOverwrite: String?
    /// The help box is on screen.
    public var helpVisible = false
    public var message: String?
    /// The first line shown of a memo longer than the screen (the view clamps it).
    public var scroll = 0
}

/// What the detail scene asks of the coordinator and the terminal.
public enum DetailEvent: Sendable, Hashable {
    case back
    case edit(Memo)
    /// The memo was deleted, here or elsewhere.
    case gone(deletedHere: Bool)
    /// Put this text on the clipboard (the terminal layer knows how: OSC 52).
    case copy(String)
    /// `h`: the memo's kept versions.
    case history
}

/// The detail scene's model, live: an edit by anyone shows at once, a delete elsewhere is reported.
@FrontEnd
public final class DetailViewModel {
    public let memoID: UUID
    private let storage: any MemoStorage
    private let dateFormat: MemoDateFormat
    private let store: StateStore<DetailState>
    private let subscription: Subscription?
    public var state: Subject<DetailState> { store.subject }
    /// Requests for the coordinator and the terminal (no replay).
    public let events = Subject<DetailEvent>()
    public let deleteAction: Action<Memo, Memo>
    /// The delete under way or last done, if any (tests await it).
    public private(set) var deleteTask: Task<Void, Never>?
    public let strings: Strings

    /// The store's edits are hopped onto the front end's loop (`FrontEnd.hop`) and looked at there, in order.
    public init(memoID: UUID, storage: any MemoStorage, dateFormat: MemoDateFormat, strings: Strings = .english) {
        self.memoID = memoID
        self.strings = strings
        self.storage = storage
        self.dateFormat = dateFormat
        let store = StateStore(DetailState())
        self.store = store
        deleteAction = Action { memo in try await storage.delete(id: memo.id, expectedRevision: memo.revision) }
        let events = events
        subscription = storage.watchList { delta in
            // Edits that do not name this memo cost nothing more than looking at their ids.
            guard let listed = Self.listed(memoID, after: delta) else { return }
            FrontEnd.hop {
                Self.follow(listed, store: store, events: events, dateFormat: dateFormat, strings: strings)
            }
        }
    }

    /// Shows the memo as the list now has it, or says it is gone (once).
    private static func follow(
        _ listed: Memo?, store: StateStore<DetailState>, events: Subject<DetailEvent>,
        dateFormat: MemoDateFormat, strings: Strings
    ) {
        let gone = store.update { state -> Bool in
            if let memo = listed {
                state.memo = memo
                state.contents = Self.contents(of: memo, dateFormat: dateFormat, strings: strings)
                return false
            }
            if state.isGone { return false }
            state.isGone = true
            state.confirmingDelete = false
            state.message = strings.deletedElsewhere
            return true
        }
        if gone { events.send(.gone(deletedHere: false)) }
    }

    public func close() { subscription?.cancel() }

    /// The memo as `delta` leaves it: `.some(nil)` when it is not (or no longer) listed, nil when the delta says
    /// nothing about it.
    nonisolated static func listed(_ id: UUID, after delta: ListDelta) -> Memo?? {
        switch delta {
        case .reset(let memos):
            return .some(memos.first { $0.id == id })
        case .edits(let edits):
            var listed: Memo?? = nil
            for edit in edits {
                switch edit {
                case .insert(let memo, _) where memo.id == id, .update(let memo, _) where memo.id == id:
                    listed = .some(memo)
                case .remove(let memo, _) where memo.id == id:
                    listed = .some(nil)
                default:
                    break
                }
            }
            return listed
        }
    }

    /// The text, the insert date, and the revision with who made the last change and when (`revision 7 · edited by
    /// alice · <date>`; just the date for a change from before authors were kept; a memo written here and not yet
    /// confirmed has no revision yet: revision 0).
    public nonisolated static func contents(of memo: Memo, dateFormat: MemoDateFormat, strings: Strings) -> [String] {
        let updated = dateFormat.string(from: memo.updateDate)
        let revision: String
        if memo.revision == 0 {
            revision = strings.notYetConfirmed
        } else if memo.author.isEmpty {
            revision = strings.revisionUpdated(memo.revision, updated)
        } else {
            revision = strings.history.revisionEditedBy(memo.revision, memo.author.description, updated)
        }
        return [memo.content, dateFormat.string(from: memo.insertDate), revision]
    }

    public var current: DetailState { store.value }

    public func back() { events.send(.back) }

    /// Puts a one-line message on the detail (a read-only key).
    public func show(message: String) { store.update { $0.message = message } }

    /// Scrolls a long memo; the view keeps the offset within the text.
    public func scroll(by lines: Int, limit: Int) {
        store.update { state in state.scroll = max(0, min(limit, state.scroll + lines)) }
    }

    /// Opens the memo's history.
    public func openHistory() {
        guard current.memo != nil, !current.isGone else { return }
        events.send(.history)
    }

    public func edit() {
        guard let memo = current.memo, !current.isGone else { return }
        events.send(.edit(memo))
    }

    // MARK: Delete

    public func requestDelete() {
        store.update { state in state.confirmingDelete = state.memo != nil && !state.isGone }
    }

    /// The answer to "delete? y/N"; the delete runs as a child task (returned, for tests) and the scene stays
    /// responsive while the store answers.
    @discardableResult
    public func answerDelete(_ yes: Bool) -> Task<Void, Never>? {
        let memo = store.update { state -> Memo? in
            defer { state.confirmingDelete = false }
            return state.confirmingDelete && yes ? state.memo : nil
        }
        guard let memo else { return nil }
        // Mark the memo gone first: the store's list may arrive before `delete` returns.
        store.update { $0.isGone = true }
        let task = Task { @FrontEnd [self] in
            let result = await deleteAction.execute(memo)
            switch result {
            case .success:
                store.update { $0.message = strings.deleted }
                events.send(.gone(deletedHere: true))
            case .failure(let error):
                let stillThere = storage.contains(id: memo.id)
                store.update { state in
                    state.isGone = !stillThere
                    state.message = ListViewModel.describe(error, strings)
                }
                if !stillThere { events.send(.gone(deletedHere: false)) }
            }
        }
        deleteTask = task
        return task
    }

    // MARK: Share

    /// Asks for the memo to be put on the clipboard and says so.
    public func share() {
        guard let memo = current.memo else { return }
        events.send(.copy(memo.content))
        store.update { $0.message = strings.copied }
    }

    /// The file `S` offers: ./memo-<first 8 characters of the id>.txt
    public var defaultFilePath: String { "./memo-\(memoID.lowercasedString.prefix(8)).txt" }

    /// Shows the "save to" prompt with the default path selected, so that typing a name replaces it.
    public func beginSave() {
        store.update { state in
            state.savePrompt = state.memo == nil ? nil : LineInput(defaultFilePath, selected: true)
        }
    }

    public func editSavePath(_ edit: (inout LineInput) -> Void) {
        store.update { state in
            guard state.savePrompt != nil else { return }
            edit(&state.savePrompt!)
        }
    }

    public func cancelSave() { store.update { $0.savePrompt = nil } }

    /// Writes the memo to the prompt's path (or `path`) and says where. A file that is there already is not
    /// replaced before the user says so: the question goes on screen and `answerOverwrite` carries on.
    /// - Returns: the absolute path written, or nil when nothing was written (the message or the question says
    ///   why).
    @discardableResult
    public func confirmSave(to path: String? = nil) async -> String? {
        let (memo, chosen) = store.update { state -> (Memo?, String?) in
            defer { state.savePrompt = nil }
            return (state.memo, path ?? state.savePrompt?.text)
        }
        guard memo != nil, let chosen, !chosen.isEmpty else { return nil }
        let expanded = NSString(string: chosen).expandingTildeInPath
        let target = URL(fileURLWithPath: expanded).standardizedFileURL.path
        switch MemoFile.existing(target) {
        case .file:
            store.update { $0.confirmingOverwrite = target }
            return nil
        case .nothing, .directory:
            // A folder is refused by the write itself, with the system's words.
            return write(to: target)
        }
    }

    /// The answer to "overwrite it? y/N": yes writes; no goes back to the prompt with the path, to pick another.
    @discardableResult
    public func answerOverwrite(_ yes: Bool) async -> String? {
        let target = store.update { state -> String? in
            defer { state.confirmingOverwrite = nil }
            return state.confirmingOverwrite
        }
        guard let target else { return nil }
        if yes { return write(to: target) }
        store.update { $0.savePrompt = LineInput(target, selected: false) }
        return nil
    }

    private func write(to path: String) -> String? {
        guard let memo = current.memo else { return nil }
        do {
            try MemoFile.write(Array(memo.content.utf8), to: path)
            store.update { $0.message = strings.savedTo(path) }
            return path
        } catch {
            store.update { $0.message = strings.couldNotSave(error.path, error.reason) }
            return nil
        }
    }

    // MARK: Help

    /// `?`: shows or hides the box of this scene's keys.
    public func toggleHelp() { store.update { $0.helpVisible.toggle() } }
}
