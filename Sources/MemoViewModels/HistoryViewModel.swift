import Foundation
import MemoModel

/// What the history scene shows over its list of versions.
public enum HistoryPane: Sendable, Hashable {
    /// The versions, newest first.
    case versions
    /// The selected version's content (Enter).
    case content
    /// The selected version's difference from the one before it (`d`).
    case difference
}

/// What the history scene shows.
public struct HistoryState: Sendable, Hashable {
    /// The memo as the list now has it (its revision guards a restore); nil before it was seen.
    public var memo: Memo?
    /// The kept versions, newest first.
    public var versions: [MemoVersion] = []
    /// Older versions are kept beyond the ones loaded.
    public var more = false
    /// The first answer has come.
    public var loaded = false
    public var selected = 0
    public var pane = HistoryPane.versions
    /// The first line shown in the content or difference pane.
    public var scroll = 0
    /// The version whose restore waits for y/N.
    public var confirmingRestore: MemoVersion?
    /// True once the memo is no longer listed.
    public var isGone = false
    public var message: String?

    public var selectedVersion: MemoVersion? { versions.indices.contains(selected) ? versions[selected] : nil }

    /// The version before the selected one (nil for the first, or when older ones are not loaded).
    public var previousVersion: MemoVersion? {
        versions.indices.contains(selected + 1) ? versions[selected + 1] : nil
    }
}

/// What the history scene asks of the coordinator.
public enum HistoryEvent: Sendable, Hashable {
    case back
    /// The memo was deleted: the scene leaves (the detail below goes too).
    case gone
}

/// The history scene's model (`h` on a memo): its kept versions with author and date, newest first; a version's
/// content, its difference from the one before, and restore with a y/N question. It follows the memo: a change by
/// anyone reloads the versions (a child task, as every request of the front end), a delete sends it back.
@FrontEnd
public final class HistoryViewModel {
    /// How many versions one request asks for (the server keeps 50 by default).
    public static let pageSize = 200

    public let memoID: UUID
    private let source: any VersionSource
    private let store: StateStore<HistoryState>
    private var subscription: Subscription?
    /// Answers of loads older than the newest one started are dropped.
    private var loadGeneration = 0
    public var state: Subject<HistoryState> { store.subject }
    public let events = Subject<HistoryEvent>()
    public let strings: Strings
    public let dateFormat: MemoDateFormat
    /// The load or restore under way or last done (tests await it).
    public private(set) var task: Task<Void, Never>?

    /// Loads the versions at once; the store's edits that name this memo are hopped onto the front end's loop and
    /// reload them there.
    public init(
        memoID: UUID, storage: any MemoStorage, source: any VersionSource, dateFormat: MemoDateFormat,
        strings: Strings = .english
    ) {
        self.memoID = memoID
        self.source = source
        self.strings = strings
        self.dateFormat = dateFormat
        store = StateStore(HistoryState())
        subscription = storage.watchList { [weak self] delta in
            guard let listed = DetailViewModel.listed(memoID, after: delta) else { return }
            FrontEnd.hop { self?.follow(listed) }
        }
        reload()
    }

    public var current: HistoryState { store.value }

    public func close() {
        subscription?.cancel()
        subscription = nil
    }

    private func follow(_ listed: Memo?) {
        guard let memo = listed else {
            let gone = store.update { state -> Bool in
                defer { state.isGone = true }
                state.confirmingRestore = nil
                state.message = strings.deletedElsewhere
                return !state.isGone
            }
            if gone { events.send(.gone) }
            return
        }
        // The first sight of the memo is the list as it was when the scene opened: the load `init` started covers it.
        let changed = store.update { state -> Bool in
            defer { state.memo = memo }
            return state.memo.map { $0.revision != memo.revision } ?? false
        }
        if changed { reload() }
    }

    /// Asks for the versions again; the selection stays on the same revision when it is still kept.
    public func reload() {
        loadGeneration += 1
        let generation = loadGeneration
        let (source, memoID) = (source, memoID)
        task = Task { @FrontEnd [weak self] in
            let result: Result<VersionPage, any Error>
            do {
                result = .success(try await source.history(of: memoID, limit: Self.pageSize))
            } catch {
                result = .failure(error)
            }
            guard let self, generation == loadGeneration else { return }
            apply(result)
        }
    }

    private func apply(_ result: Result<VersionPage, any Error>) {
        switch result {
        case .success(let page):
            store.update { state in
                let kept = state.selectedVersion?.revision
                state.versions = page.versions
                state.more = page.more
                state.loaded = true
                state.selected = kept.flatMap { revision in page.versions.firstIndex { $0.revision == revision } }
                    ?? min(state.selected, max(0, page.versions.count - 1))
                if let asked = state.confirmingRestore, !page.versions.contains(asked) {
                    state.confirmingRestore = nil
                }
            }
        case .failure(let error):
            if case MemoError.notFound = error {
                // Purged or never known: nothing to show here any more.
                store.update { state in
                    state.loaded = true
                    state.message = strings.history.historyGone
                }
                if !current.isGone {
                    store.update { $0.isGone = true }
                    events.send(.gone)
                }
                return
            }
            store.update { state in
                state.loaded = true
                state.message = strings.history.historyNotLoaded(ListViewModel.describe(error, strings))
            }
        }
    }

    public func back() {
        if current.pane != .versions {
            store.update { state in
                state.pane = .versions
                state.scroll = 0
            }
            return
        }
        events.send(.back)
    }

    public func moveDown() { move(by: 1) }
    public func moveUp() { move(by: -1) }

    private func move(by offset: Int) {
        store.update { state in
            state.selected = max(0, min(state.versions.count - 1, state.selected + offset))
            state.message = nil
        }
    }

    /// Enter: the selected version's whole content.
    public func showContent() { show(.content) }

    /// `d`: the selected version's difference from the one before.
    public func showDifference() { show(.difference) }

    private func show(_ pane: HistoryPane) {
        store.update { state in
            guard state.selectedVersion != nil else { return }
            state.pane = pane
            state.scroll = 0
            state.message = nil
        }
    }

    /// Scrolls the content or difference pane; the view keeps the offset within the text.
    public func scroll(by lines: Int, limit: Int) {
        store.update { state in state.scroll = max(0, min(limit, state.scroll + lines)) }
    }

    /// The lines the difference pane shows: the selected version against the one before it (all added for the
    /// first version kept).
    public var differenceLines: [DiffLine] {
        let state = current
        guard let version = state.selectedVersion else { return [] }
        return DiffLine.lines(from: state.previousVersion?.content ?? "", to: version.content)
    }

    public func show(message: String) { store.update { $0.message = message } }

    // MARK: Restore

    /// `r`: asks "restore revision N? y/N" about the selected version.
    public func requestRestore() {
        store.update { state in
            guard let version = state.selectedVersion, !state.isGone else { return }
            if version.revision == state.memo?.revision {
                state.message = strings.history.alreadyCurrent
                return
            }
            state.confirmingRestore = version
        }
    }

    /// The answer to the question; the restore, guarded by the memo's revision as the scene last saw it, runs as
    /// a child task (returned, for tests) and the scene keeps taking keys.
    @discardableResult
    public func answerRestore(_ yes: Bool) -> Task<Void, Never>? {
        let asked = store.update { state -> (MemoVersion, UInt64?)? in
            defer { state.confirmingRestore = nil }
            guard yes, let version = state.confirmingRestore else { return nil }
            return (version, state.memo?.revision)
        }
        guard let (version, expected) = asked else { return nil }
        let (source, memoID, strings) = (source, memoID, self.strings)
        store.update { $0.message = strings.history.restoring }
        let restore = Task { @FrontEnd [weak self] in
            let message: String
            do {
                try await source.restore(id: memoID, revision: version.revision, expectedRevision: expected)
                message = strings.history.restoredRevision(version.revision)
            } catch {
                message = Self.describeRestore(error, strings)
            }
            self?.store.update { $0.message = message }
        }
        task = restore
        return restore
    }

    nonisolated static func describeRestore(_ error: any Error, _ strings: Strings) -> String {
        switch error {
        case MemoError.conflict: return strings.history.notRestoredConflict
        case MemoError.versionNotFound(_, let reason): return strings.history.notRestored(reason)
        case MemoError.notFound: return strings.history.notRestored(strings.alreadyDeleted)
        default: return strings.history.notRestored("\(error)")
        }
    }
}
