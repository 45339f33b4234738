import Foundation
import MemoModel

/// What the trash scene shows.
public struct TrashState: Sendable, Hashable {
    /// The deleted memos, the last deleted first.
    public var items: [TrashEntry] = []
    /// More are in the trash than were loaded.
    public var more = false
    /// The first answer has come.
    public var loaded = false
    public var selected = 0
    /// The memo whose bringing back waits for y/N.
    public var confirmingRestore: TrashEntry?
    public var message: String?

    public var selectedItem: TrashEntry? { items.indices.contains(selected) ? items[selected] : nil }
}

/// What the trash scene asks of the coordinator.
public enum TrashEvent: Sendable, Hashable {
    case back
}

/// The trash scene's model (`T` on the list): the deleted memos, the last deleted first, with who deleted them
/// and when; `r` brings one back under its id after a y/N question. It follows the list: a delete or a memo
/// brought back, by anyone, reloads the trash (a child task).
@FrontEnd
public final class TrashViewModel {
    /// How many deleted memos one request asks for.
    public static let pageSize = 500

    private let source: any VersionSource
    private let store: StateStore<TrashState>
    private var subscription: Subscription?
    private var loadGeneration = 0
    public var state: Subject<TrashState> { store.subject }
    public let events = Subject<TrashEvent>()
    public let strings: Strings
    public let dateFormat: MemoDateFormat
    /// The load or restore under way or last done (tests await it).
    public private(set) var task: Task<Void, Never>?

    public init(
        storage: any MemoStorage, source: any VersionSource, dateFormat: MemoDateFormat, strings: Strings = .english
    ) {
        self.source = source
        self.strings = strings
        self.dateFormat = dateFormat
        store = StateStore(TrashState())
        subscription = storage.watchList { [weak self] delta in
            guard Self.changesTrash(delta) else { return }
            FrontEnd.hop { self?.reload() }
        }
        reload()
    }

    /// Whether a change of the list can change the trash: a memo removed (deleted) or inserted (brought back).
    nonisolated static func changesTrash(_ delta: ListDelta) -> Bool {
        switch delta {
        case .reset: return true
        case .edits(let edits):
            return edits.contains { edit in
                switch edit {
                case .insert, .remove: return true
                case .update: return false
                }
            }
        }
    }

    public var current: TrashState { store.value }

    public func close() {
        subscription?.cancel()
        subscription = nil
    }

    public func back() { events.send(.back) }

    public func moveDown() { move(by: 1) }
    public func moveUp() { move(by: -1) }

    private func move(by offset: Int) {
        store.update { state in
            state.selected = max(0, min(state.items.count - 1, state.selected + offset))
            state.message = nil
        }
    }

    public func show(message: String) { store.update { $0.message = message } }

    /// Asks for the trash again; the selection stays on the same memo while it is there.
    public func reload() {
        loadGeneration += 1
        let generation = loadGeneration
        let source = source
        task = Task { @FrontEnd [weak self] in
            let result: Result<TrashPage, any Error>
            do {
                result = .success(try await source.trash(limit: Self.pageSize))
            } catch {
                result = .failure(error)
            }
            guard let self, generation == loadGeneration else { return }
            store.update { state in
                state.loaded = true
                switch result {
                case .success(let page):
                    let kept = state.selectedItem?.memo.id
                    state.items = page.entries
                    state.more = page.more
                    state.selected = kept.flatMap { id in page.entries.firstIndex { $0.memo.id == id } }
                        ?? min(state.selected, max(0, page.entries.count - 1))
                    if let asked = state.confirmingRestore, !page.entries.contains(where: { $0.memo.id == asked.memo.id }) {
                        // Brought back or purged meanwhile: the question no longer stands.
                        state.confirmingRestore = nil
                        state.message = strings.history.trashItemGone
                    }
                case .failure(let error):
                    state.message = strings.history.historyNotLoaded(ListViewModel.describe(error, strings))
                }
            }
        }
    }

    // MARK: Restore

    /// `r`: asks "bring back …? y/N" about the selected memo.
    public func requestRestore() {
        store.update { state in state.confirmingRestore = state.selectedItem }
    }

    /// The answer; the memo comes back under its id as a child task (returned, for tests).
    @discardableResult
    public func answerRestore(_ yes: Bool) -> Task<Void, Never>? {
        let item = store.update { state -> TrashEntry? in
            defer { state.confirmingRestore = nil }
            return yes ? state.confirmingRestore : nil
        }
        guard let item else { return nil }
        let (source, strings) = (source, self.strings)
        store.update { $0.message = strings.history.restoring }
        let restore = Task { @FrontEnd [weak self] in
            let message: String
            var purged = false
            do {
                // Guarded by the delete's revision: a memo deleted again meanwhile is not brought back twice.
                try await source.restore(id: item.memo.id, revision: nil, expectedRevision: item.revision)
                message = strings.history.broughtBack
            } catch {
                switch error {
                case MemoError.notFound, MemoError.versionNotFound: purged = true
                default: break
                }
                message = HistoryViewModel.describeRestore(error, strings)
            }
            self?.store.update { $0.message = message }
            // Purged meanwhile: the list no longer holds it (no change of the list says so).
            if purged { self?.reload() }
        }
        task = restore
        return restore
    }
}
