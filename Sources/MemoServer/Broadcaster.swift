import MemoModel
import MemoNet
import MemoWire
import Synchronization

/// Carries every change of the store to the subscribers on every loop: one observer on the store, each change
/// encoded once, one hop per loop (not per subscriber) for all the changes that came while the loop was busy.
///
/// A new subscription is registered on its own loop with the revision of the snapshot (or history) it was sent:
/// changes at or below it are skipped, later ones delivered. That is gap-free and duplicate-free without a lock,
/// because the store applies a change before it calls its observers and each loop runs its queued work in order.
///
/// When the store lets go (it cannot follow its shared database and reloads), every connection on every loop gets
/// going-away 504 `lagging`, in order with the changes: the changes queued before it reach the subscribers, none
/// after it does (the store's changes after a reload skip the ones it never had).
final class Broadcaster: Sendable {
    private let subscription: Subscription
    private let letGoSubscription: Subscription

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
                context.eventLoop.execute { Self.run(mailbox.take(), on: context.value) }
            }
        }
        letGoSubscription = store.observeLetGo { reason in
            for (context, mailbox) in zip(contexts, mailboxes) where mailbox.post(letGo: reason) {
                context.eventLoop.execute { Self.run(mailbox.take(), on: context.value) }
            }
        }
    }

    /// Delivers what a mailbox held, letting every connection go where the store let go.
    private static func run(_ posts: Mailbox.Posts, on context: LoopContext) {
        var start = 0
        for (index, reason) in posts.letGo {
            context.deliver(Array(posts.frames[start..<index]))
            context.letGo(reason)
            start = index
        }
        context.deliver(start == 0 ? posts.frames : Array(posts.frames[start...]))
    }

    func stop() {
        subscription.cancel()
        letGoSubscription.cancel()
    }
}

/// The changes waiting for one loop, in revision order, and where the store let go among them.
private final class Mailbox: Sendable {
    struct Posts {
        var frames: [SharedFrame] = []
        /// Each let-go: the number of frames posted before it, and the reason.
        var letGo: [(Int, String)] = []

        var isEmpty: Bool { frames.isEmpty && letGo.isEmpty }
    }

    private let posts = Mutex(Posts())

    /// Adds `frame`; returns true when the mailbox was empty (the caller sends the hop that takes it).
    func post(_ frame: SharedFrame) -> Bool {
        posts.withLock { posts in
            posts.frames.append(frame)
            return posts.frames.count == 1 && posts.letGo.isEmpty
        }
    }

    /// Adds a let-go after the frames already posted; returns true when the mailbox was empty.
    func post(letGo reason: String) -> Bool {
        posts.withLock { posts in
            let wasEmpty = posts.isEmpty
            posts.letGo.append((posts.frames.count, reason))
            return wasEmpty
        }
    }

    func take() -> Posts {
        posts.withLock { posts in
            defer {
                posts.frames.removeAll(keepingCapacity: true)
                posts.letGo.removeAll()
            }
            return posts
        }
    }
}

/// How many subscriptions are open on all loops.
final class SubscriberCount: Sendable {
    let value = Atomic<Int>(0)
}
