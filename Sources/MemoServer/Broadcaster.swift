import MemoCore
import MemoNet
import MemoWire
import Synchronization

/// Carries every change of the store to the subscribers on every loop: one observer on the store, each change
/// encoded once, one hop per loop (not per subscriber) for all the changes that came while the loop was busy.
///
/// A new subscription is registered on its own loop with the revision of the snapshot (or history) it was sent:
/// changes at or below it are skipped, later ones delivered. That is gap-free and duplicate-free without a lock,
/// because the store applies a change before it calls its observers and each loop runs its queued work in order.
final class Broadcaster: Sendable {
    private let subscription: Subscription

    init(store: any ServingStore, contexts: [LoopBound<LoopContext>], subscribers: SubscriberCount) {
        let mailboxes = contexts.map { _ in Mailbox() }
        // Called under the store's lock, in revision order: it only counts, encodes and queues.
        subscription = store.observeChanges { change in
            // With no subscription anywhere the change is not even encoded. A subscription counts itself before
            // it reads its snapshot or history, and this check runs after the store applied the change: so a
            // subscription this check missed has read a snapshot that already holds the change.
            guard subscribers.value.load(ordering: .sequentiallyConsistent) > 0 else { return }
            let frame = SharedFrame(change: change)
            for (context, mailbox) in zip(contexts, mailboxes) where mailbox.post(frame) {
                // The first change into an empty mailbox sends the hop; the changes that follow before the loop
                // runs it ride along, so that a busy loop writes each subscriber's socket once for all of them.
                context.eventLoop.execute { context.value.deliver(mailbox.take()) }
            }
        }
    }

    func stop() {
        subscription.cancel()
    }
}

/// The changes waiting for one loop, in revision order.
private final class Mailbox: Sendable {
    private let frames = Mutex<[SharedFrame]>([])

    /// Adds `frame`; returns true when the mailbox was empty (the caller sends the hop that takes it).
    func post(_ frame: SharedFrame) -> Bool {
        frames.withLock { frames in
            frames.append(frame)
            return frames.count == 1
        }
    }

    func take() -> [SharedFrame] {
        frames.withLock { frames in
            defer { frames.removeAll(keepingCapacity: true) }
            return frames
        }
    }
}

/// How many subscriptions are open on all loops.
final class SubscriberCount: Sendable {
    let value = Atomic<Int>(0)
}
