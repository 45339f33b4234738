import MemoWire

/// A change frame encoded once for every subscriber; only the request id differs, patched as it is copied.
final class SharedFrame: Sendable {
    let revision: UInt64
    let bytes: [UInt8]

    init(change: Change) {
        revision = change.revision
        bytes = Message.change(change).frame(requestID: 0)
    }
}

/// Produces `snapshot` or `memos` chunks one at a time, so that a large list is encoded only as fast as the peer
/// reads it and never sits whole in a connection's buffer.
struct ChunkStream {
    let requestID: UInt32
    let revision: UInt64
    let memos: [Memo]
    let snapshot: Bool
    let maxFrameSize: Int
    private var next = 0
    private(set) var finished = false

    init(requestID: UInt32, revision: UInt64, memos: [Memo], snapshot: Bool, maxFrameSize: Int) {
        self.requestID = requestID
        self.revision = revision
        self.memos = memos
        self.snapshot = snapshot
        self.maxFrameSize = maxFrameSize
    }

    /// The next chunk's frame, appended to `buffer`; the last one is flagged and ends the stream.
    mutating func produce(into writer: inout WireWriter) {
        let budget = maxFrameSize - WireProtocol.headerSize - 8 - 1 - 4
        var end = next
        var size = 0
        while end < memos.count {
            let memoSize = Message.memoFixedSize + memos[end].content.utf8.count
            if size + memoSize > budget, end > next { break }
            size += memoSize
            end += 1
        }
        let last = end == memos.count
        let part = Array(memos[next..<end])
        let message: Message = snapshot
            ? .snapshot(revision: revision, last: last, memos: part)
            : .memos(revision: revision, last: last, memos: part)
        message.encode(into: &writer, requestID: requestID)
        next = end
        finished = last
    }
}

/// What a connection still has to send, in order.
struct OutboundQueue {
    enum Item {
        case frame([UInt8])
        case change(SharedFrame, requestID: UInt32)
        case stream(ChunkStream)
    }

    private var items = FIFO<Item>()
    /// Bytes of whole frames waiting (streams count only once a chunk is made).
    private(set) var queuedBytes = 0

    var isEmpty: Bool { items.isEmpty }

    mutating func append(_ item: Item) {
        switch item {
        case .frame(let bytes): queuedBytes += bytes.count
        case .change(let frame, _): queuedBytes += frame.bytes.count
        case .stream: break
        }
        items.append(item)
    }

    mutating func removeAll() {
        items = FIFO()
        queuedBytes = 0
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
                queuedBytes -= bytes.count
                items.removeFirst()
            case .change(let frame, let requestID):
                let start = writer.bytes.count
                writer.bytes.append(contentsOf: frame.bytes)
                writer.patchU32(requestID, at: start + 5)
                queuedBytes -= frame.bytes.count
                items.removeFirst()
            case .stream(var stream):
                stream.produce(into: &writer)
                if stream.finished {
                    if !stream.snapshot { listsFinished += 1 }
                    items.removeFirst()
                } else {
                    items.replaceFirst(.stream(stream))
                }
            }
        }
        return listsFinished
    }
}
