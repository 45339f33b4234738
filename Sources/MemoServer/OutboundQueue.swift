import MemoModel
import MemoWire

/// A change frame encoded once for every subscriber; only the request id differs, patched as it is copied. Encoded
/// twice: as versions 1 and 2 write it, and as version 3 does (the memo with its author).
final class SharedFrame: Sendable {
    let revision: UInt64
    let bytes: [UInt8]
    let authoredBytes: [UInt8]
    /// CLOCK_MONOTONIC nanoseconds when the frame was made, as the store applied the change: where
    /// `memo_delivery_delay_seconds` starts.
    let madeAt: UInt64

    init(change: Change) {
        revision = change.revision
        bytes = Message.change(change).frame(requestID: 0)
        authoredBytes = Message.change(change).frame(requestID: 0, version: WireProtocol.authorsVersion)
        madeAt = monotonicNanos()
    }

    /// Runs `body` with the frame as protocol `version` writes it, lent rather than returned: a function returning
    /// it gave each caller its own reference (a retain and a release per subscriber).
    @inline(__always)
    func withBytes<R>(for version: UInt16, _ body: ([UInt8]) throws -> R) rethrows -> R {
        if version >= WireProtocol.authorsVersion { return try body(authoredBytes) }
        return try body(bytes)
    }
}

/// Produces `snapshot`, `memos` or `page` chunks one at a time, so that a large list is encoded only as fast as the
/// peer reads it and never sits whole in a connection's buffer.
struct ChunkStream {
    let requestID: UInt32
    let revision: UInt64
    let memos: [Memo]
    let snapshot: Bool
    let maxFrameSize: Int
    /// Set for the answer to a `list-page`: `page` chunks, the last saying whether more memos follow the page.
    let pageMore: Bool?
    /// The connection's protocol version (from 3, memos carry their authors).
    let version: UInt16
    private var next = 0
    private(set) var finished = false

    init(
        requestID: UInt32, revision: UInt64, memos: [Memo], snapshot: Bool, maxFrameSize: Int, pageMore: Bool? = nil,
        version: UInt16 = WireProtocol.minimumVersion
    ) {
        self.version = version
        self.requestID = requestID
        self.revision = revision
        self.memos = memos
        self.snapshot = snapshot
        self.maxFrameSize = maxFrameSize
        self.pageMore = pageMore
    }

    /// The next chunk's frame, appended to `buffer`; the last one is flagged and ends the stream.
    mutating func produce(into writer: inout WireWriter) {
        let budget = maxFrameSize - WireProtocol.headerSize - 8 - 1 - 4
        var end = next
        var size = 0
        while end < memos.count {
            let memoSize = Message.memoSize(memos[end], authors: version >= WireProtocol.authorsVersion)
            if size + memoSize > budget, end > next { break }
            size += memoSize
            end += 1
        }
        let last = end == memos.count
        let part = Array(memos[next..<end])
        let message: Message = if let pageMore {
            .page(revision: revision, last: last, more: last && pageMore, memos: part)
        } else if snapshot {
            .snapshot(revision: revision, last: last, memos: part)
        } else {
            .memos(revision: revision, last: last, memos: part)
        }
        message.encode(into: &writer, requestID: requestID, version: version)
        next = end
        finished = last
    }
}

/// A resumed subscription's missed changes, read from the store's history and encoded as the peer reads them, a
/// round's worth at a time. Queued whole, the catch-up counted toward the slow-consumer limit before the socket was
/// offered a byte of it, and a subscriber that had missed more than the limit was dropped on every resume. Read
/// from the history as it goes, it holds no copy of the changes either: a peer that resumes many subscriptions and
/// does not read holds a stream each, not the changes.
///
/// The history keeps the last changes only: one it lets go of before it is sent ends the stream as `lost` (the
/// connection then drops the peer as a slow consumer, which resumes and is answered `history-gone`). No change after
/// it is ever sent: there would be a gap.
struct ChangeStream {
    let requestID: UInt32
    let store: any ChangeFeed
    /// The connection's protocol version (from 3, memos carry their authors).
    let version: UInt16
    /// The last revision sent; the stream ends at `until`, the head its `subscribed` named (later changes are
    /// delivered to the subscription as they are made).
    private(set) var sent: UInt64
    let until: UInt64
    /// The history let go of the next change before it was sent.
    private(set) var lost = false

    /// Changes read from the history at a time (one lock each).
    static let batch = 32

    init(requestID: UInt32, store: any ChangeFeed, version: UInt16, after: UInt64, until: UInt64) {
        self.requestID = requestID
        self.store = store
        self.version = version
        sent = after
        self.until = until
    }

    var finished: Bool { sent >= until }

    /// Appends the next changes' frames to `writer`, at least one, until it holds `limit` bytes or none is left;
    /// nothing once `lost`.
    mutating func produce(into writer: inout WireWriter, upTo limit: Int) {
        while !lost, sent < until {
            let changes: [Change]
            do throws(MemoError) {
                changes = try store.changes(after: sent, limit: Int(min(until - sent, UInt64(Self.batch)))).changes
            } catch {
                lost = true  // historyGone (or a closed store): what comes after cannot be sent without a gap
                return
            }
            guard !changes.isEmpty else {
                lost = true
                return
            }
            for change in changes {
                Message.change(change).encode(into: &writer, requestID: requestID, version: version)
                sent = change.revision
                if writer.bytes.count >= limit { return }
            }
        }
    }
}

/// What a connection still has to send, in order.
///
/// Small frames (pongs, acknowledgements, errors) are copied into one contiguous tail instead of each keeping its
/// own array: a peer that pipelines thousands of pings would otherwise hold one allocation per pong, several
/// times its size, which the byte count did not see (a ping flood reached about 100 MB before an 8 MiB limit).
struct OutboundQueue {
    enum Item {
        case frame([UInt8])
        case change(SharedFrame, requestID: UInt32)
        case stream(ChunkStream)
        case changes(ChangeStream)
    }

    private var items = FIFO<Item>()
    /// The protocol version the connection agreed: how its frames are encoded.
    var version = WireProtocol.minimumVersion
    /// Small frames appended after every item, in order; `tailOffset` bytes of it are already sent.
    private var tail: [UInt8] = []
    private var tailOffset = 0
    /// Bytes of whole frames waiting (streams count only once a chunk or change is made), each with what holding it
    /// costs.
    private(set) var queuedBytes = 0
    /// A resumed subscription's catch-up lost changes the history let go of before they were sent (`ChangeStream`):
    /// nothing more is written, and the connection drops the peer as a slow consumer.
    private(set) var catchUpLost = false

    /// Frames up to this size go into the tail.
    static let smallFrame = 4096
    /// What an item costs besides its bytes: its slot in the queue's array (which grows by doubling) and, for a
    /// frame of its own, the array's header and the allocator's overhead.
    static let itemOverhead = 2 * MemoryLayout<Item>.stride
    static let arrayOverhead = 32 + 16

    var isEmpty: Bool { items.isEmpty && tailOffset == tail.count }

    /// Every byte this queue holds for the peer: queued frames with their overhead and, while it holds any, the
    /// tail's whole allocation (an empty tail keeps at most 64 KiB for reuse, as the loop's buffers do).
    var heldBytes: Int {
        let unsent = tail.count - tailOffset
        return unsent > 0 ? queuedBytes - unsent + tail.capacity : queuedBytes
    }

    mutating func append(_ item: Item) {
        switch item {
        case .frame(let bytes) where bytes.count <= Self.smallFrame:
            if tailOffset == tail.count {
                tail.removeAll(keepingCapacity: tail.capacity <= 64 * 1024)
                tailOffset = 0
            }
            tail.append(contentsOf: bytes)
            queuedBytes += bytes.count
            return
        case .frame(let bytes): queuedBytes += bytes.count + Self.arrayOverhead + Self.itemOverhead
        case .change(let frame, _): queuedBytes += frame.withBytes(for: version) { $0.count } + Self.itemOverhead
        case .stream, .changes: queuedBytes += Self.itemOverhead
        }
        moveTailToItems()
        items.append(item)
    }

    /// Queues `message`'s frame. A small one is encoded straight into the tail, with no array of its own (one
    /// allocation and one copy fewer per answered write); a larger one is queued as `append(.frame)` queues it.
    mutating func append(_ message: Message, requestID: UInt32) {
        appendEncoded { writer, version in message.encode(into: &writer, requestID: requestID, version: version) }
    }

    /// Queues the frame of a `memo` message answering `requestID` (every successful write's answer), encoded into
    /// the tail as `append(_:requestID:)` would encode `.memo(memo)`, without making that `Message`.
    mutating func append(memo: Memo, requestID: UInt32) {
        appendEncoded { writer, version in
            writer.authors = version >= WireProtocol.authorsVersion
            writer.memoFrame(memo, type: Message.Kind.memo.rawValue, requestID: requestID)
        }
    }

    /// Queues the `memo` frame answering a write that succeeded, its result matched case by case down to the memo:
    /// `case .success(let outcome)` copied the outcome (its `Change`, the memo's strings retained and released), and
    /// `outcome.memo` the memo once more. False, and nothing queued, for a failure.
    mutating func append(success result: Result<WriteOutcome, MemoError>, requestID: UInt32) -> Bool {
        switch result {
        case .success(.change(let change)): append(memo: change.memo, requestID: requestID)
        case .success(.existing(let memo)): append(memo: memo, requestID: requestID)
        case .failure: return false
        }
        return true
    }

    /// Encodes one frame at the end of the tail with `encode`; a frame larger than `smallFrame` is moved out of the
    /// tail into an item of its own.
    @inline(__always)
    private mutating func appendEncoded(_ encode: (inout WireWriter, UInt16) -> Void) {
        if tailOffset == tail.count {
            tail.removeAll(keepingCapacity: tail.capacity <= 64 * 1024)
            tailOffset = 0
        }
        let start = tail.count
        // The writer takes the tail's storage for the encoding (a swap, so it stays uniquely held and grows in
        // place) and gives it back.
        var writer = WireWriter(capacity: 0)
        swap(&writer.bytes, &tail)
        encode(&writer, version)
        swap(&writer.bytes, &tail)
        let size = tail.count - start
        if size <= Self.smallFrame {
            queuedBytes += size
            return
        }
        let frame = Array(tail[start...])
        tail.removeSubrange(start...)
        append(.frame(frame))
    }

    /// The change frame and request id when that is all the queue holds (a subscriber's usual delivery), so that
    /// the connection can seal the shared frame without filling a writer with it first.
    var soleChange: (frame: SharedFrame, requestID: UInt32)? {
        guard tailOffset == tail.count, items.count == 1, case .change(let frame, let requestID) = items.first else {
            return nil
        }
        return (frame, requestID)
    }

    /// Removes the change `soleChange` gave, once it is sent.
    mutating func removeSoleChange(_ frame: SharedFrame) {
        assert(soleChange?.frame === frame, "removeSoleChange without the change soleChange gave")
        queuedBytes -= frame.withBytes(for: version) { $0.count } + Self.itemOverhead
        items.removeFirst()
    }

    /// Puts the unsent tail behind the items, so that what comes next goes after it.
    private mutating func moveTailToItems() {
        guard tailOffset < tail.count else { return }
        let pending = tailOffset == 0 ? tail : Array(tail[tailOffset...])
        queuedBytes += Self.arrayOverhead + Self.itemOverhead
        items.append(.frame(pending))
        tail = []
        tailOffset = 0
    }

    mutating func removeAll() {
        items = FIFO()
        tail = []
        tailOffset = 0
        queuedBytes = 0
        catchUpLost = false
    }

    /// Moves frames into `writer` until it holds about `limit` bytes or the queue is empty.
    /// - Returns: how many `list` answers were finished (their last chunk made).
    @discardableResult
    mutating func fill(_ writer: inout WireWriter, upTo limit: Int) -> Int {
        var listsFinished = 0
        while writer.bytes.count < limit, let item = items.first {
            switch item {
            case .frame(let bytes):
                writer.bytes.append(contentsOf: bytes)
                queuedBytes -= bytes.count + Self.arrayOverhead + Self.itemOverhead
                items.removeFirst()
            case .change(let frame, let requestID):
                let start = writer.bytes.count
                let count = frame.withBytes(for: version) { bytes in
                    writer.bytes.append(contentsOf: bytes)
                    return bytes.count
                }
                writer.patchU32(requestID, at: start + WireProtocol.requestIDOffset)
                queuedBytes -= count + Self.itemOverhead
                items.removeFirst()
            case .stream(var stream):
                stream.produce(into: &writer)
                if stream.finished {
                    if !stream.snapshot { listsFinished += 1 }
                    queuedBytes -= Self.itemOverhead
                    items.removeFirst()
                } else {
                    items.replaceFirst(.stream(stream))
                }
            case .changes(var stream):
                stream.produce(into: &writer, upTo: limit)
                if stream.lost {
                    // Nothing behind it may go: the connection drops the peer (`catchUpLost`).
                    catchUpLost = true
                    return listsFinished
                }
                if stream.finished {
                    queuedBytes -= Self.itemOverhead
                    items.removeFirst()
                } else {
                    items.replaceFirst(.changes(stream))
                }
            }
        }
        if items.isEmpty, tailOffset < tail.count, writer.bytes.count < limit {
            // The tail is whole frames back to back: any cut is fine, TLS carries a byte stream.
            let end = min(tail.count, tailOffset + limit - writer.bytes.count)
            writer.bytes.append(contentsOf: tail[tailOffset..<end])
            queuedBytes -= end - tailOffset
            tailOffset = end
            if tailOffset == tail.count {
                tail.removeAll(keepingCapacity: tail.capacity <= 64 * 1024)
                tailOffset = 0
            }
        }
        return listsFinished
    }
}
