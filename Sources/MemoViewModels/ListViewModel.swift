import Foundation
import MemoModel
/// What the list scene shows.
public struct ListState: Sendable, Hashable {
    /// Every memo, newest first, as the store last sent them.
    public var memos: MemoRows { MemoRows(rows: all, slots: slots) }
    /// The memos that pass the filter, newest first. While a keystroke's filtering was abandoned for a newer
    /// keystroke this is the last finished result; the view model settles it before anything else.
    public var visible: MemoRows { MemoRows(rows: shown, slots: slots) }
    /// The selected memo; selection follows the memo, not its row.
    public var selectedID: UUID?
    /// Case-insensitive substring filter, matched on UTF-8 bytes; empty shows everything.
    public var filter = LineInput()
    /// True while the user types the filter (after `/`).
    public var isEditingFilter = false
    /// The memo the user asked to delete, while the y/N question is on screen.
    public var pendingDelete: Memo?
    public var helpVisible = false
    /// A one-line message for the user ("deleted", an error).
    public var message: String?
    /// A memo to select as soon as the store lists it (one just saved, whose list may come a moment later).
    public var wantedSelection: UUID?
    /// Every row, each in a slot of its own.
    var slots = RowSlots()
    /// Every row's slot, in the list's order (chunked, so that one edit copies one chunk, not the list).
    var all = ChunkedArray<Int32>()
    /// The slots of the rows that pass `shownNeedle`, in the list's order.
    var shown = ChunkedArray<Int32>()
    /// The folded filter `shown` was made for: behind `filter` only while a superseded keystroke is pending.
    var shownNeedle: [UInt8] = []

    public var selectedIndex: Int? {
        guard let selectedID else { return nil }
        return shown.firstOffset { slots[$0].memo.id == selectedID }
    }

    public var selectedMemo: Memo? { selectedIndex.map { visible[$0] } }

    /// The memo in `slot`.
    func memo(_ slot: Int32) -> Memo { slots[slot].memo }

    /// Equal when they show the same: the memos, the visible ones and everything else on screen (not where each
    /// row's slot is).
    public static func == (lhs: ListState, rhs: ListState) -> Bool {
        lhs.selectedID == rhs.selectedID && lhs.filter == rhs.filter && lhs.isEditingFilter == rhs.isEditingFilter
            && lhs.pendingDelete == rhs.pendingDelete && lhs.helpVisible == rhs.helpVisible
            && lhs.message == rhs.message && lhs.wantedSelection == rhs.wantedSelection
            && lhs.shownNeedle == rhs.shownNeedle && lhs.memos == rhs.memos && lhs.visible == rhs.visible
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(selectedID)
        hasher.combine(filter)
        hasher.combine(isEditingFilter)
        hasher.combine(pendingDelete)
        hasher.combine(helpVisible)
        hasher.combine(message)
        hasher.combine(wantedSelection)
        hasher.combine(shownNeedle)
        hasher.combine(memos)
        hasher.combine(visible)
    }
}

/// What the list asks the coordinator to do.
public enum ListEvent: Sendable, Hashable {
    case open(UUID)
    case compose
    /// `!`: the writes the server refused.
    case notSaved
    /// `T`: the deleted memos.
    case trash
    case quit
}

/// The list scene's model: the live list, its selection and filter, and delete with confirmation.
///
/// The store's list arrives as position edits (`watchList`): one remote change costs O(log N) searches plus one
/// chunk's move (`ChunkedArray`), not a rebuild of the list and of the filter's result.
@FrontEnd
public final class ListViewModel {
    private let storage: any MemoStorage
    private let store: StateStore<ListState>
    private let listSubscription: Subscription?
    /// True when a newer keystroke is waiting: the filtering of this one is then abandoned.
    private let superseded: () -> Bool
    /// What the view shows.
    public var state: Subject<ListState> { store.subject }
    /// Navigation requests, for the coordinator (no replay).
    public let events = Subject<ListEvent>()
    /// Deletes a memo if it is still at the revision the user saw.
    public let deleteAction: Action<Memo, Memo>
    /// The delete under way or last done, if any (tests await it).
    public private(set) var deleteTask: Task<Void, Never>?
    /// The words of the user's language.
    public let strings: Strings

    /// The store's edits are hopped onto the front end's loop (`FrontEnd.hop`) and applied there, in the order
    /// the store delivered them.
    /// - Parameter superseded: whether a newer keystroke has arrived (the terminal looks at its input); a filter
    ///   keystroke's search stops when it says so, and the newer keystroke searches for its own text.
    public init(storage: any MemoStorage, strings: Strings = .english, superseded: @escaping () -> Bool = { false }) {
        self.storage = storage
        self.strings = strings
        self.superseded = superseded
        let store = StateStore(ListState())
        self.store = store
        deleteAction = Action { memo in
            try await storage.delete(id: memo.id, expectedRevision: memo.revision)
        }
        listSubscription = storage.watchList { delta in
            FrontEnd.hop { store.update { state in Self.apply(delta, to: &state) } }
        }
    }

    /// Stops following the store.
    public func close() {
        listSubscription?.cancel()
    }

    public var current: ListState { store.value }

    // MARK: Selection

    public func moveDown(by count: Int = 1) { move { index, total in min(total - 1, index + count) } }
    public func moveUp(by count: Int = 1) { move { index, _ in max(0, index - count) } }
    public func moveToFirst() { move { _, _ in 0 } }
    public func moveToLast() { move { _, total in total - 1 } }

    public func select(_ id: UUID) {
        store.update { state in
            Self.refilter(&state)
            if state.shown.firstOffset(where: { state.memo($0).id == id }) != nil {
                state.selectedID = id
                state.wantedSelection = nil
            } else {
                state.wantedSelection = id
            }
        }
    }

    private func move(_ target: (Int, Int) -> Int) {
        store.update { state in
            Self.refilter(&state)
            guard !state.shown.isEmpty else { return }
            let index = state.selectedIndex ?? 0
            state.selectedID = state.memo(state.shown[target(index, state.shown.count)]).id
            state.wantedSelection = nil
            state.message = nil
        }
    }

    /// Opens the selected memo.
    public func openSelected() {
        settleFilter()
        guard let memo = current.selectedMemo else { return }
        events.send(.open(memo.id))
    }

    public func compose() { events.send(.compose) }

    /// Opens the not-saved list (writes the server refused at replay).
    public func openNotSaved() { events.send(.notSaved) }

    /// Opens the trash (deleted memos).
    public func openTrash() { events.send(.trash) }

    public func quit() { events.send(.quit) }

    public func toggleHelp() { store.update { $0.helpVisible.toggle() } }

    /// Puts a one-line message on the list (a memo deleted elsewhere, a refused write, a read-only key).
    public func show(message: String) { store.update { $0.message = message } }

    // MARK: Filter

    public func beginFilter() { store.update { $0.isEditingFilter = true } }

    /// Edits the filter's text and filters again, unless a newer keystroke arrives meanwhile: then the search
    /// stops where it is, and the result stays the last finished one until a later call settles it.
    public func editFilter(_ edit: (inout LineInput) -> Void) {
        store.update { state in
            edit(&state.filter)
            Self.refilter(&state, superseded: superseded)
        }
    }

    /// Finishes a filtering that a newer keystroke abandoned (nothing to do when there is none): before drawing,
    /// and before any action that reads the visible memos.
    public func settleFilter() {
        guard ListFilter.needle(current.filter.text) != current.shownNeedle else { return }
        store.update { Self.refilter(&$0) }
    }

    /// Enter: stop typing, keep the filter.
    public func commitFilter() {
        store.update { state in
            state.isEditingFilter = false
            Self.refilter(&state)
        }
    }

    /// Esc: drop the filter and show everything.
    public func clearFilter() {
        store.update { state in
            state.filter = LineInput()
            state.isEditingFilter = false
            Self.refilter(&state)
        }
    }

    // MARK: Delete

    /// Asks "delete? y/N" about the selected memo.
    public func requestDelete() {
        store.update { state in
            Self.refilter(&state)
            state.pendingDelete = state.selectedMemo
        }
    }

    /// The answer to the question; anything but yes keeps the memo. The delete runs as a child task (returned,
    /// for tests): the list keeps taking keys while the store answers.
    @discardableResult
    public func answerDelete(_ yes: Bool) -> Task<Void, Never>? {
        let memo = store.update { state -> Memo? in
            defer { state.pendingDelete = nil }
            return yes ? state.pendingDelete : nil
        }
        guard let memo else { return nil }
        let task = Task { @FrontEnd [self] in
            let result = await deleteAction.execute(memo)
            store.update { state in
                switch result {
                case .success: state.message = strings.deleted
                case .failure(let error): state.message = Self.describe(error, strings)
                }
            }
        }
        deleteTask = task
        return task
    }

    nonisolated static func describe(_ error: any Error, _ strings: Strings) -> String {
        if case MemoError.conflict = error { return strings.notDeletedConflict }
        if case MemoError.notFound = error { return strings.alreadyDeleted }
        return "\(error)"
    }
}
