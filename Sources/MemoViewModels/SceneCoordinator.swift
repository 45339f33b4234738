import Foundation
import MemoModel
import MemoText

/// A scene's view model.
public enum SceneModel: Sendable {
    case list(ListViewModel)
    case detail(DetailViewModel)
    case compose(ComposeViewModel)
    case notSaved(NotSavedViewModel)
    case history(HistoryViewModel)
    case trash(TrashViewModel)

    @FrontEnd fileprivate func close() {
        switch self {
        case .list(let model): model.close()
        case .detail(let model): model.close()
        case .compose: break
        case .notSaved(let model): model.close()
        case .history(let model): model.close()
        case .trash(let model): model.close()
        }
    }
}

/// The navigation: keeps the scene stack and a view model per scene, and turns what the view models ask for into
/// transitions.
///
/// Front-end state (`@FrontEnd`): requests come from the view models and from the store's deliveries hopped onto
/// the front end's loop, never from another thread. They are handled one at a time, in order: a request made
/// while one is being handled (a view model answering a transition) goes through a subject, which queues it
/// until the one under way is done.
@FrontEnd
public final class SceneCoordinator {
    private struct Live {
        var stack = SceneStack()
        var models: [SceneModel] = []
        var subscriptions: [[Subscription]] = []
        /// Details whose memo was deleted while a modal covered them; popped when they come back on screen.
        var goneDetails: Set<UUID> = []
    }

    private enum Request: Sendable {
        case transition(Transition)
        case detailGone(UUID, deletedHere: Bool)
        case refused(WriteRefusal)
        case composeFinished(Memo?)
        case quit
    }

    private let storage: any MemoStorage
    /// The not-saved list behind `!` (the remote store's); nil: the key does nothing.
    private let notSaved: (any NotSavedSource)?
    /// The versions and the trash behind `h` and `T` (the server's); nil: those keys say there are none.
    private let versions: (any VersionSource)?
    private let dateFormat: MemoDateFormat
    /// Whether a newer keystroke waits (the list's filtering gives way to it).
    private let inputWaiting: () -> Bool
    /// How long a save may go unanswered before the compose scene says so.
    private let saveTimeout: Duration
    /// The words of the user's language, for every scene.
    public let strings: Strings
    private var live = Live()
    /// Requests, one at a time.
    private let inbox = Subject<Request>()
    /// The coordinator's own subscription to `inbox` (a subscription ends when released).
    private var inboxSubscription: Subscription?

    /// The stack after every transition.
    public let stack = Subject(SceneStack())
    /// Text the user asked to put on the clipboard (the terminal layer encodes it).
    public let clipboard = Subject<String>()
    /// Becomes true when the user quits.
    public let quitRequested = Subject(false)
    /// Transitions that could not be applied (no replay); the stack is unchanged then.
    public let navigationErrors = Subject<NavigationError>()

    /// - Parameters:
    ///   - strings: the table of words; by default the one for the date format's locale.
    ///   - inputWaiting: whether a newer keystroke has arrived; the list's filtering gives way to it.
    ///   - saveTimeout: how long a save may go unanswered before the compose scene says so.
    public init(
        storage: any MemoStorage, dateFormat: MemoDateFormat, strings: Strings? = nil,
        inputWaiting: @escaping () -> Bool = { false }, saveTimeout: Duration = .seconds(5),
        notSaved: (any NotSavedSource)? = nil, versions: (any VersionSource)? = nil
    ) {
        self.storage = storage
        self.notSaved = notSaved
        self.versions = versions
        self.inputWaiting = inputWaiting
        self.saveTimeout = saveTimeout
        self.dateFormat = dateFormat
        self.strings = strings ?? Strings.forLocale(dateFormat.locale)
        inboxSubscription = inbox.subscribe { [weak self] request in
            FrontEnd.assumeIsolated { self?.handle(request) }
        }
    }

    /// Shows the list as the root scene.
    public func start() { transition(.root(.list)) }

    /// Applies a transition (queued behind any request being handled).
    public func transition(_ transition: Transition) { inbox.send(.transition(transition)) }

    /// A write made offline was refused when it was sent (the store has rolled it back): an edit that met a
    /// conflict opens the editor on our text with the conflict choice; anything else is a line on the list.
    public func refused(_ refusal: WriteRefusal) { inbox.send(.refused(refusal)) }

    /// The scene on screen.
    public var currentScene: Scene? { live.stack.top }

    /// The view model of the scene on screen.
    public var currentModel: SceneModel? { live.models.last }

    /// Every scene's view model, bottom first (views of modal scenes draw over the ones below).
    public var models: [SceneModel] { live.models }

    /// Closes every view model.
    public func stop() {
        let (models, subscriptions) = (live.models, live.subscriptions)
        live = Live()
        subscriptions.joined().forEach { $0.cancel() }
        models.forEach { $0.close() }
    }

    // MARK: Handling requests

    private func handle(_ request: Request) {
        switch request {
        case .transition(let transition):
            apply(transition)
        case .detailGone(let id, let deletedHere):
            var onTop = false
            if case .detail(id) = live.stack.top { onTop = true } else { live.goneDetails.insert(id) }
            if onTop { apply(.pop) }
            // The detail's own line goes with it: the list, where the user lands, says what happened.
            listModel?.show(message: deletedHere ? strings.deleted : strings.deletedElsewhere)
        case .refused(let refusal):
            if refusal.isConflict, refusal.kind == .update {
                apply(.modal(.compose(.resolve(refusal))))
            } else {
                let name = TextLayout.headline(of: refusal.memo.content)
                listModel?.show(message: strings.refused(name, refusal.reason))
            }
        case .composeFinished(let saved):
            apply(.dismiss)
            if let saved, case .list(let list) = currentModel { list.select(saved.id) }
        case .quit:
            quitRequested.send(true)
        }
    }

    /// The list at the bottom of the stack.
    private var listModel: ListViewModel? {
        guard case .list(let list) = live.models.first else { return nil }
        return list
    }

    private func apply(_ transition: Transition) {
        var transition = transition
        while true {
            let old = live.stack
            let new: SceneStack
            do {
                new = try SceneStack.apply(transition, to: old)
            } catch {
                navigationErrors.send(error)
                return
            }
            var kept = zip(old.entries, new.entries).prefix { $0 == $1 }.count
            if case .root = transition { kept = 0 }
            let added = new.entries[kept...].map { makeModel(for: $0.scene) }
            let removedModels = Array(live.models[kept...])
            let removedSubscriptions = Array(live.subscriptions[kept...].joined())
            live.models.removeSubrange(kept...)
            live.subscriptions.removeSubrange(kept...)
            live.models += added.map(\.model)
            live.subscriptions += added.map(\.subscriptions)
            live.stack = new
            removedSubscriptions.forEach { $0.cancel() }
            removedModels.forEach { $0.close() }
            stack.send(new)
            // A detail whose memo went away while covered leaves as soon as it is back on screen.
            guard case .detail(let id) = new.top, live.goneDetails.contains(id) else { return }
            live.goneDetails.remove(id)
            transition = .pop
        }
    }

    private func makeModel(for scene: Scene) -> (model: SceneModel, subscriptions: [Subscription]) {
        switch scene {
        case .list:
            let model = ListViewModel(storage: storage, strings: strings, superseded: inputWaiting)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                case .open(let id): self?.inbox.send(.transition(.push(.detail(id))))
                case .compose: self?.inbox.send(.transition(.modal(.compose(.create))))
                case .notSaved:
                    guard self?.notSaved != nil else { return }
                    self?.inbox.send(.transition(.push(.notSaved)))
                case .trash:
                    guard self?.versions != nil else {
                        FrontEnd.assumeIsolated { [weak model] in
                            model?.show(message: model?.strings.history.noHistoryHere ?? "")
                        }
                        return
                    }
                    self?.inbox.send(.transition(.push(.trash)))
                case .quit: self?.inbox.send(.quit)
                }
            }
            return (.list(model), [subscription])
        case .detail(let id):
            let model = DetailViewModel(memoID: id, storage: storage, dateFormat: dateFormat, strings: strings)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                case .back: self?.inbox.send(.transition(.pop))
                case .edit(let memo): self?.inbox.send(.transition(.modal(.compose(.edit(memo)))))
                case .gone(let deletedHere): self?.inbox.send(.detailGone(id, deletedHere: deletedHere))
                case .copy(let text): self?.clipboard.send(text)
                case .history:
                    guard self?.versions != nil else {
                        FrontEnd.assumeIsolated { [weak model] in
                            model?.show(message: model?.strings.history.noHistoryHere ?? "")
                        }
                        return
                    }
                    self?.inbox.send(.transition(.push(.history(id))))
                }
            }
            // Gone before anyone listened (opened after a delete): say so now.
            if model.current.isGone { inbox.send(.detailGone(id, deletedHere: false)) }
            return (.detail(model), [subscription])
        case .compose(let mode):
            let model = ComposeViewModel(mode: mode, storage: storage, strings: strings, saveTimeout: saveTimeout)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                case .finished(let saved): self?.inbox.send(.composeFinished(saved))
                case .resolvedNotSaved(let id): self?.notSaved?.discard(id)
                }
            }
            return (.compose(model), [subscription])
        case .notSaved:
            // Pushed only when there is a source (the list's `!`); an empty one otherwise.
            let model = NotSavedViewModel(source: notSaved ?? NoNotSaved(), strings: strings)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                case .back: self?.inbox.send(.transition(.pop))
                case .copy(let text): self?.clipboard.send(text)
                }
            }
            return (.notSaved(model), [subscription])
        case .history(let id):
            let model = HistoryViewModel(
                memoID: id, storage: storage, source: versions ?? NoVersions(), dateFormat: dateFormat,
                strings: strings)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                // A delete also sends the detail below back (it follows the memo itself).
                case .back, .gone: self?.inbox.send(.transition(.pop))
                }
            }
            return (.history(model), [subscription])
        case .trash:
            let model = TrashViewModel(
                storage: storage, source: versions ?? NoVersions(), dateFormat: dateFormat, strings: strings)
            let subscription = model.events.subscribe { [weak self] event in
                switch event {
                case .back: self?.inbox.send(.transition(.pop))
                }
            }
            return (.trash(model), [subscription])
        }
    }
}

/// Versions for a store that keeps none: every request is refused (the scenes are pushed only with a source).
private struct NoVersions: VersionSource {
    func history(of id: UUID, limit: Int) async throws -> VersionPage {
        throw MemoError.unavailable("no versions kept")
    }
    func trash(limit: Int) async throws -> TrashPage {
        throw MemoError.unavailable("no versions kept")
    }
    func restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?) async throws -> Memo {
        throw MemoError.unavailable("no versions kept")
    }
}

/// A not-saved list that stays empty (a store with no offline queue).
private struct NoNotSaved: NotSavedSource {
    let entries = Subject<[NotSavedEntry]>([])
    func retry(_ id: UUID) {}
    func saveAsNew(_ id: UUID) {}
    func discard(_ id: UUID) {}
}
