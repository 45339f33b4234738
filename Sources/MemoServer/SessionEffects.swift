import MemoModel
import MemoWire

/// The steps a connection takes for its session's actions, in order: a value that walks the actions, so the
/// gathering of writes and the shape of each queued answer are tested without a connection.
///
/// Consecutive writes go to the store as one batch, submitted before the next other step, so that requests reach
/// the store in the order they came. (Reads were answered while the session decoded the frames: a read pipelined
/// behind a write may not see it, as PROTOCOL.md says.) Answers become queue items: a frame as it is, a list or a
/// page as a stream of chunks made as the peer reads them, encoded as the connection's protocol version writes them
/// (memos with their authors from version 3).
struct SessionEffects: IteratorProtocol {
    enum Step {
        /// Run these writes on the store as one batch: the request ids and the operations in two arrays, so the
        /// store takes the operations as they are, with no copy of a (request id, operation) pair per write.
        case submit(requestIDs: [UInt32], ops: [WriteOp])
        /// Queue this for the peer.
        case queue(OutboundQueue.Item)
        /// Queue the `memo` frame of this memo answering this request (`OutboundQueue.append(memo:requestID:)`).
        case queueMemo(requestID: UInt32, Memo)
        /// The session agreed `version` in `hello`: every frame from here on is that version's.
        case helloAccepted(version: UInt16)
        case subscribe(requestID: UInt32, start: WatchStart)
        case unsubscribe(requestID: UInt32)
        case close(reason: String)
        case log(LogLine)
        /// Answer this request from a read made off the loop: the server's status, kept versions or the trash.
        case readOffLoop(requestID: UInt32, read: OffLoopRead)
    }

    /// Mutable so that each write's action is taken out of it rather than copied (see `next`).
    private var actions: [SessionAction]
    private var index = 0
    private let maxFrameSize: Int
    private let version: UInt16

    /// - Parameter version: the protocol version the session agreed (the session decodes `hello` before it gives
    ///   its actions, so it holds for every answer among them).
    init(_ actions: consuming [SessionAction], maxFrameSize: Int, version: UInt16) {
        self.actions = actions
        self.maxFrameSize = maxFrameSize
        self.version = version
    }

    mutating func next() -> Step? {
        guard index < actions.count else { return nil }
        if case .submit = actions[index] {
            var end = index
            while end < actions.count, case .submit = actions[end] { end += 1 }
            // Sized once: grown append by append, each array was reallocated five times for a batch of 16.
            var requestIDs: [UInt32] = []
            var ops: [WriteOp] = []
            requestIDs.reserveCapacity(end - index)
            ops.reserveCapacity(end - index)
            while index < end {
                // Taken out (a trivial action left in its place), not copied: a copy of the (request id, op)
                // payload went through the runtime's generic tuple copy and retained the op's strings once more
                // (~250 instructions per write). The connection hands its actions over, so the array is not
                // shared and the swap copies nothing else.
                var action = SessionAction.helloAccepted
                swap(&action, &actions[index])
                guard case .submit(let requestID, let op) = consume action else { preconditionFailure("a submit") }
                requestIDs.append(requestID)
                ops.append(op)
                index += 1
            }
            return .submit(requestIDs: requestIDs, ops: ops)
        }
        // Taken out like a write's (see above): a copy retained the payload (a get's memo: its content and author
        // strings) and the actions' teardown released it once more.
        var action = SessionAction.helloAccepted
        swap(&action, &actions[index])
        index += 1
        switch consume action {
        case .submit: preconditionFailure("gathered above")
        case .send(let bytes): return .queue(.frame(bytes))
        case .sendMemo(let requestID, let memo): return .queueMemo(requestID: requestID, memo)
        case .sendList(let requestID, let revision, let memos):
            return .queue(.stream(ChunkStream(
                requestID: requestID, revision: revision, memos: memos, snapshot: false, maxFrameSize: maxFrameSize,
                version: version)))
        case .sendPage(let requestID, let page):
            return .queue(.stream(ChunkStream(
                requestID: requestID, revision: page.revision, memos: page.memos, snapshot: false,
                maxFrameSize: maxFrameSize, pageMore: page.more, version: version)))
        case .helloAccepted: return .helloAccepted(version: version)
        case .subscribe(let requestID, let start): return .subscribe(requestID: requestID, start: start)
        case .unsubscribe(let requestID): return .unsubscribe(requestID: requestID)
        case .close(let reason): return .close(reason: reason)
        case .log(let line): return .log(line)
        case .status(let requestID): return .readOffLoop(requestID: requestID, read: .status)
        case .readVersions(let requestID, let read): return .readOffLoop(requestID: requestID, read: .versions(read))
        }
    }
}
