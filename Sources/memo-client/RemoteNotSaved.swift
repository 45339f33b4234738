import Foundation
import MemoClient
import MemoModel
import MemoViewModels

/// The remote store's not-saved list in the front end's terms.
final class RemoteNotSaved: NotSavedSource {
    let entries: Subject<[NotSavedEntry]>
    private let store: RemoteStore
    private let watch: Subscription

    init(store: RemoteStore) {
        self.store = store
        let entries = Subject(Self.entries(store.notSaved.value ?? []))
        self.entries = entries
        watch = store.notSaved.subscribe { entries.send(Self.entries($0)) }
    }

    deinit {
        watch.cancel()
    }

    func retry(_ id: UUID) { store.retryNotSaved(id) }
    func saveAsNew(_ id: UUID) { store.saveNotSavedAsNew(id) }
    func discard(_ id: UUID) { store.discardNotSaved(id) }

    private static func entries(_ kept: [NotSavedWrite]) -> [NotSavedEntry] {
        kept.map { write in
            NotSavedEntry(
                id: write.id, kind: RemoteStatus.kind(of: write.write), content: write.content, reason: write.reason,
                deletedElsewhere: write.deletedElsewhere)
        }
    }
}
