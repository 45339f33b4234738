import MemoNet
import MemoWire

/// Carries every change of the store to the subscribers on every loop: one watch on the store, each change
/// encoded once, one hop per loop (not per subscriber).
///
/// A new subscription is registered on its own loop with the revision of the snapshot (or history) it was sent:
/// changes at or below it are skipped, later ones delivered. That is gap-free and duplicate-free without a lock,
/// because the store applies a change before publishing it and each loop runs its queued work in order.
final class Broadcaster: Sendable {
    private let contexts: [LoopBound<LoopContext>]
    private let subscription: Subscription

    init(store: any ServingStore, contexts: [LoopBound<LoopContext>]) {
        self.contexts = contexts
        let head = store.revision
        subscription = store.watch(from: .after(head)) { event in
            guard case .change(let change) = event else { return }
            let frame = SharedFrame(change: change)
            for context in contexts {
                context.eventLoop.execute { context.value.deliver(frame) }
            }
        }
    }

    func stop() {
        subscription.cancel()
    }
}
