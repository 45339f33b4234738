import Foundation
import MemoModel
import MemoText

/// One write the server refused after the screen had shown it, kept (never deleted) until the user decides.
public struct NotSavedEntry: Sendable, Hashable, Identifiable {
    /// Create, update or delete, as a refusal names them.
    public typealias Kind = WriteRefusal.Kind

    /// The entry's own id.
    public var id: UUID
    public var kind: Kind
    /// The text the user typed (a delete's: the memo as it was).
    public var content: String
    /// The server's reason, as one line.
    public var reason: String
    /// The memo was deleted elsewhere: retrying cannot edit it, `save as new` keeps the text.
    public var deletedElsewhere: Bool

    public init(id: UUID, kind: Kind, content: String, reason: String, deletedElsewhere: Bool) {
        self.id = id
        self.kind = kind
        self.content = content
        self.reason = reason
        self.deletedElsewhere = deletedElsewhere
    }
}

/// Where the not-saved list comes from (the remote store's); each choice changes the list, which is sent again.
public protocol NotSavedSource: Sendable {
    /// The entries, oldest first; replays.
    var entries: Subject<[NotSavedEntry]> { get }
    /// Sends the write again (an edit or delete replaces what the server holds).
    func retry(_ id: UUID)
    /// Saves the text as a new memo.
    func saveAsNew(_ id: UUID)
    /// Forgets the entry for good.
    func discard(_ id: UUID)
}

/// What the not-saved scene shows.
public struct NotSavedState: Sendable, Hashable {
    public var entries: [NotSavedEntry] = []
    public var selected = 0
    /// The entry whose discard waits for y/N.
    public var confirmingDiscard: UUID?
    public var message: String?

    public var selectedEntry: NotSavedEntry? { entries.indices.contains(selected) ? entries[selected] : nil }
}

/// What the not-saved scene asks of the coordinator and the terminal.
public enum NotSavedEvent: Sendable, Hashable {
    case back
    /// Put this text on the clipboard.
    case copy(String)
}

/// The "not saved" scene: the writes the server refused at replay, each with its reason, and what can be done
/// with each: retry, save as new, copy, discard (after y/N).
@FrontEnd
public final class NotSavedViewModel {
    private let source: any NotSavedSource
    private let store: StateStore<NotSavedState>
    private let subscription: Subscription
    public var state: Subject<NotSavedState> { store.subject }
    public let events = Subject<NotSavedEvent>()
    public let strings: Strings

    /// The source's list is hopped onto the front end's loop (`FrontEnd.hop`) and applied there, in order.
    public init(source: any NotSavedSource, strings: Strings = .english) {
        self.source = source
        self.strings = strings
        let store = StateStore(NotSavedState())
        self.store = store
        subscription = source.entries.subscribe { entries in
            FrontEnd.hop {
                store.update { state in
                    state.entries = entries
                    state.selected = max(0, min(state.selected, entries.count - 1))
                    if let id = state.confirmingDiscard, !entries.contains(where: { $0.id == id }) {
                        state.confirmingDiscard = nil
                    }
                }
            }
        }
    }

    public var current: NotSavedState { store.value }

    public func close() { subscription.cancel() }

    public func back() { events.send(.back) }

    public func moveUp() { store.update { $0.selected = max(0, $0.selected - 1) } }

    public func moveDown() { store.update { $0.selected = max(0, min($0.entries.count - 1, $0.selected + 1)) } }

    public func retry() {
        guard let entry = current.selectedEntry else { return }
        store.update { $0.message = strings.notSavedRetried }
        source.retry(entry.id)
    }

    public func saveAsNew() {
        guard let entry = current.selectedEntry else { return }
        store.update { $0.message = strings.notSavedSavedAsNew }
        source.saveAsNew(entry.id)
    }

    public func copy() {
        guard let entry = current.selectedEntry else { return }
        events.send(.copy(entry.content))
        store.update { $0.message = strings.copied }
    }

    public func requestDiscard() {
        store.update { state in state.confirmingDiscard = state.selectedEntry?.id }
    }

    public func answerDiscard(_ yes: Bool) {
        let id = store.update { state -> UUID? in
            defer { state.confirmingDiscard = nil }
            return yes ? state.confirmingDiscard : nil
        }
        guard let id else { return }
        store.update { $0.message = strings.notSavedDiscarded }
        source.discard(id)
    }
}
