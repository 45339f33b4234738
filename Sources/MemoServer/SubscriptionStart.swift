import MemoModel
import MemoWire

/// What a new subscription sends first, read from the store, and the revision its deliveries start after: a
/// value, so each way a `subscribe` begins is tested with a store and no connection.
///
/// From the start: the whole list as `snapshot` chunks, streamed as the peer reads them; from a revision: `subscribed`
/// with the head, then each change after the revision up to it, read from the history and encoded as the peer reads
/// them (`ChangeStream`); from a revision the store no longer keeps: `history-gone` (or the store's error), and no
/// subscription. Memos and changes are encoded as the connection's protocol `version` writes them.
struct SubscriptionStart {
    /// The revision deliveries start after; nil when the subscription was refused (`items` says why).
    let head: UInt64?
    /// What to queue for the peer, in order.
    let items: [OutboundQueue.Item]

    init(_ start: WatchStart, requestID: UInt32, store: some ServingStore, maxFrameSize: Int, version: UInt16) {
        switch start {
        case .snapshot:
            let (revision, memos) = store.snapshot()
            head = revision
            items = [.stream(ChunkStream(
                requestID: requestID, revision: revision, memos: memos, snapshot: true, maxFrameSize: maxFrameSize,
                version: version))]
        case .after(let revision):
            do throws(MemoError) {
                // Only whether the history holds them, and the head: the changes are read as the peer takes them.
                let current = try store.changes(after: revision, limit: 0).head
                head = current
                let subscribed = OutboundQueue.Item.frame(Message.subscribed(head: current).frame(requestID: requestID))
                items = current == revision ? [subscribed] : [
                    subscribed,
                    .changes(ChangeStream(
                        requestID: requestID, store: store, version: version, after: revision, until: current)),
                ]
            } catch {
                head = nil
                let refusal = if case .historyGone(let requested, let oldest) = error {
                    Message.historyGone(requested: requested, oldestAvailable: oldest)
                } else {
                    Message.error(code: ErrorCode(error), message: error.description)
                }
                items = [.frame(refusal.frame(requestID: requestID))]
            }
        }
    }
}
