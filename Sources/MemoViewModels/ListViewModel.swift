import Foundation
import MemoCore

/// What the list scene shows.
public struct ListState: Sendable, Hashable {
    /// Every memo, newest first, as the store last sent them.
    public var memos: [Memo] = []
    /// The memos that pass the filter, newest first.
    public var visible: [Memo] = []
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

    public var selectedIndex: Int? {
        guard let selectedID else { return nil }
        return visible.firstIndex { $0.id == selectedID }
    }

    public var selectedMemo: Memo? { selectedIndex.map { visible[$0] } }
}

/// What the list asks the coordinator to do.
public enum ListEvent: Sendable, Hashable {
    case open(UUID)
    case compose
    case quit
}

/// The seeds' `MemoListViewModel`: the live list, its selection and filter, and delete with confirmation.
public final class ListViewModel: Sendable {
    private let storage: any MemoStorage
    private let store: StateStore<ListState>
    private let listSubscription: Subscription?
    private let listFilter = ListFilter()
    /// What the view shows.
    public var state: Subject<ListState> { store.subject }
    /// Navigation requests, for the coordinator (no replay).
    public let events = Subject<ListEvent>()
    /// Deletes a memo if it is still at the revision the user saw.
    public let deleteAction: Action<Memo, Memo>
    /// The words of the user's language.
    public let strings: Strings

    public init(storage: any MemoStorage, strings: Strings = .english) {
        self.storage = storage
        self.strings = strings
        let store = StateStore(ListState())
        self.store = store
        deleteAction = Action { memo in
            try await storage.delete(id: memo.id, expectedRevision: memo.revision)
        }
        let listFilter = listFilter
        listSubscription = storage.memoList().subscribe { memos in
            store.update { state in
                let before = state.visible
                state.memos = memos
                Self.reconcile(&state, previousVisible: before, filter: listFilter)
                if let wanted = state.wantedSelection, state.visible.contains(where: { $0.id == wanted }) {
                    state.selectedID = wanted
                    state.wantedSelection = nil
                }
                if let pending = state.pendingDelete, !memos.contains(where: { $0.id == pending.id }) {
                    state.pendingDelete = nil
                }
            }
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
            if state.visible.contains(where: { $0.id == id }) {
                state.selectedID = id
                state.wantedSelection = nil
            } else {
                state.wantedSelection = id
            }
        }
    }

    private func move(_ target: (Int, Int) -> Int) {
        store.update { state in
            guard !state.visible.isEmpty else { return }
            let index = state.selectedIndex ?? 0
            state.selectedID = state.visible[target(index, state.visible.count)].id
            state.wantedSelection = nil
            state.message = nil
        }
    }

    /// Opens the selected memo.
    public func openSelected() {
        guard let memo = current.selectedMemo else { return }
        events.send(.open(memo.id))
    }

    public func compose() { events.send(.compose) }

    public func quit() { events.send(.quit) }

    public func toggleHelp() { store.update { $0.helpVisible.toggle() } }

    /// Puts a one-line message on the list (a memo deleted elsewhere, a refused write, a read-only key).
    public func show(message: String) { store.update { $0.message = message } }

    // MARK: Filter

    public func beginFilter() { store.update { $0.isEditingFilter = true } }

    public func editFilter(_ edit: (inout LineInput) -> Void) {
        store.update { state in
            let before = state.visible
            let oldNeedle = ListFilter.needle(state.filter.text)
            edit(&state.filter)
            // A filter that still holds the old one can only narrow the result: search the memos shown.
            let narrows = !oldNeedle.isEmpty && ListFilter.contains(ListFilter.needle(state.filter.text), oldNeedle)
            Self.reconcile(&state, previousVisible: before, filter: listFilter, candidates: narrows ? before : nil)
        }
    }

    /// Enter: stop typing, keep the filter.
    public func commitFilter() { store.update { $0.isEditingFilter = false } }

    /// Esc: drop the filter and show everything.
    public func clearFilter() {
        store.update { state in
            let before = state.visible
            state.filter = LineInput()
            state.isEditingFilter = false
            Self.reconcile(&state, previousVisible: before, filter: listFilter)
        }
    }

    // MARK: Delete

    /// Asks "delete? y/N" about the selected memo.
    public func requestDelete() {
        store.update { state in state.pendingDelete = state.selectedMemo }
    }

    /// The answer to the question; anything but yes keeps the memo.
    public func answerDelete(_ yes: Bool) async {
        let memo = store.update { state -> Memo? in
            defer { state.pendingDelete = nil }
            return yes ? state.pendingDelete : nil
        }
        guard let memo else { return }
        let result = await deleteAction.execute(memo)
        store.update { state in
            switch result {
            case .success: state.message = strings.deleted
            case .failure(let error): state.message = Self.describe(error, strings)
            }
        }
    }

    static func describe(_ error: any Error, _ strings: Strings) -> String {
        if case MemoError.conflict = error { return strings.notDeletedConflict }
        if case MemoError.notFound = error { return strings.alreadyDeleted }
        return "\(error)"
    }

    // MARK: Reconciling

    /// Recomputes the visible memos and keeps the selection on the same memo; when that memo is gone, selects the
    /// neighbour that followed it (or preceded it, at the end).
    /// - Parameter candidates: the memos to search instead of all of them, when the filter only narrowed.
    static func reconcile(
        _ state: inout ListState, previousVisible: [Memo], filter: ListFilter, candidates: [Memo]? = nil
    ) {
        state.visible = filter.filter(candidates ?? state.memos, ListFilter.needle(state.filter.text))
        guard let id = state.selectedID else {
            state.selectedID = state.visible.first?.id
            return
        }
        // Most updates keep the selected memo: look for it alone before building a set of every visible id.
        if state.visible.contains(where: { $0.id == id }) { return }
        let visibleIDs = Set(state.visible.map(\.id))
        if let old = previousVisible.firstIndex(where: { $0.id == id }) {
            let after = previousVisible[(old + 1)...].first { visibleIDs.contains($0.id) }
            let before = previousVisible[..<old].reversed().first { visibleIDs.contains($0.id) }
            if let neighbour = after ?? before {
                state.selectedID = neighbour.id
                return
            }
        }
        state.selectedID = state.visible.first?.id
    }
}
