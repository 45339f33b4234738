import Foundation
import MemoWire

// The request client's parts that run per request (BENCHMARKS.md, "memo-bench's own instructions per request"):
// it shares the machine's two cores with the server it measures, so what it spends per request lowers the rate.

/// One connection's batch of P requests, encoded once by `Message.encode` and sent again and again with only each
/// frame's request id and memo id written over: the same wire bytes as encoding every request afresh, without
/// building a `Message` and encoding it per request.
struct RequestBatch {
    /// P frames of `frameSize` bytes each, one after the other.
    private(set) var bytes: [UInt8]
    let frameSize: Int
    let count: Int
    /// Where each frame's memo id lies from the frame's start (nil: the request names no memo, as `list`).
    let idOffset: Int?

    /// `count` copies of `message`'s frame; `message`'s memo id (if it has one) marks where the ids are written.
    init(_ message: Message, count: Int) {
        precondition(count > 0, "a batch holds at least one request")
        var writer = WireWriter(capacity: 64)
        message.encode(into: &writer, requestID: 0)
        let frame = writer.bytes
        frameSize = frame.count
        self.count = count
        idOffset = Self.memoID(of: message).map { id in
            let wanted = withUnsafeBytes(of: id.uuid) { Array($0) }
            // The id's first place after the frame header; a fresh random id does not occur by chance before it.
            let offset = (WireProtocol.headerSize...(frame.count - 16)).first {
                frame[$0..<($0 + 16)].elementsEqual(wanted)
            }
            guard let offset else { preconditionFailure("the encoded request does not hold its memo id") }
            return offset
        }
        bytes = []
        bytes.reserveCapacity(frame.count * count)
        for _ in 0..<count { bytes.append(contentsOf: frame) }
    }

    private static func memoID(of message: Message) -> UUID? {
        switch message {
        case .create(let id, _, _, _): return id
        case .get(let id): return id
        case .update(let id, _, _, _): return id
        default: return nil
        }
    }

    /// Writes frame `slot`'s request id, and its memo id when the request names one.
    mutating func set(_ slot: Int, requestID: UInt32, id: uuid_t?) {
        let base = slot * frameSize
        let idOffset = idOffset
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: requestID.bigEndian, toByteOffset: base + WireProtocol.requestIDOffset, as: UInt32.self)
            if let idOffset, let id { raw.storeBytes(of: id, toByteOffset: base + idOffset, as: uuid_t.self) }
        }
    }
}

/// A wrong answer: one to no request in flight (or a second to one), of a type the request is not answered with,
/// or the server's going-away. The run stops with it: a benchmark that counted such answers would measure nothing.
struct AnswerFailure: Error, CustomStringConvertible {
    let description: String
}

/// The batch in flight on one connection: request ids `firstID` to `firstID + count - 1`, each answered once, by
/// the answer type its operation expects or by an error (counted). Matched by the request id's offset from
/// `firstID` into flags reused from batch to batch (no dictionary, no allocation per request).
struct AnswerTable {
    /// The type of a successful answer (`memo` for create, get and update; `memos` for list).
    let answerType: UInt8
    /// Whether the answer comes in chunks, of which only the last (chunk flags bit 0) ends its request (list).
    let chunked: Bool
    private(set) var firstID: UInt32 = 0
    private var answered: [Bool] = []
    private(set) var outstanding = 0
    private(set) var errors = 0

    init(answerType: UInt8, chunked: Bool = false) {
        self.answerType = answerType
        self.chunked = chunked
    }

    /// A new batch of `count` requests, `firstID` the first's id.
    mutating func expect(firstID: UInt32, count: Int) {
        self.firstID = firstID
        if answered.count == count {
            answered.withUnsafeMutableBufferPointer { $0.update(repeating: false) }
        } else {
            answered = Array(repeating: false, count: count)
        }
        outstanding = count
    }

    /// Takes one answer frame. - Returns: true when it ends a request (false: a list's chunk before its last).
    /// - Throws: `AnswerFailure` for a wrong answer.
    mutating func answer(type: UInt8, requestID: UInt32, payload: UnsafeRawBufferPointer) throws -> Bool {
        let offset = Int(requestID &- firstID)
        guard offset < answered.count, !answered[offset] else {
            if type == Message.Kind.goingAway.rawValue { throw AnswerFailure(description: Self.goingAway(payload)) }
            throw AnswerFailure(description: "an answer (type 0x\(String(type, radix: 16))) to request \(requestID), "
                + "which is not in flight")
        }
        if type == Message.Kind.error.rawValue {
            errors += 1
        } else if type == answerType {
            // A list's chunk: the revision (8 bytes), then the chunk flags; bit 0 marks the last.
            if chunked, payload.count > 8, payload[8] & 1 == 0 { return false }
        } else {
            throw AnswerFailure(description: "request \(requestID) answered with type 0x\(String(type, radix: 16)), "
                + "not 0x\(String(answerType, radix: 16)) or an error")
        }
        answered[offset] = true
        outstanding -= 1
        return true
    }

    private static func goingAway(_ payload: UnsafeRawBufferPointer) -> String {
        let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 0
        return "the server sent going-away (code \(code))"
    }
}

/// Cuts whole frames off the front of `bytes` (what the connection's reads brought), reading only each frame's
/// header where it lies; hands each to `body` and removes them, keeping a partial frame for the next read.
/// - Throws: `AnswerFailure` for a length no frame has (the stream cannot be read past it), or what `body` throws.
func takeFrames(
    _ bytes: inout [UInt8], maxFrameSize: Int = WireProtocol.defaultMaxFrameSize,
    _ body: (_ type: UInt8, _ requestID: UInt32, _ payload: UnsafeRawBufferPointer) throws -> Void
) throws {
    let consumed = try bytes.withUnsafeBytes { raw -> Int in
        var at = 0
        while raw.count - at >= WireProtocol.headerSize {
            let length = Int(UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
            guard length >= 5, length + 4 <= maxFrameSize else {
                throw AnswerFailure(description: "a frame of length \(length) from the server")
            }
            guard raw.count - at >= 4 + length else { break }
            let requestID = UInt32(
                bigEndian: raw.loadUnaligned(fromByteOffset: at + WireProtocol.requestIDOffset, as: UInt32.self))
            try body(
                raw[at + 4], requestID,
                UnsafeRawBufferPointer(rebasing: raw[(at + WireProtocol.headerSize)..<(at + 4 + length)]))
            at += 4 + length
        }
        return at
    }
    if consumed == bytes.count {
        bytes.removeAll(keepingCapacity: true)
    } else if consumed > 0 {
        bytes.removeFirst(consumed)
    }
}

/// The 50th and 99th percentiles of latencies in nanoseconds, in milliseconds: the values at the same ranks as
/// `LatencyStats` takes from a sorted copy, found by selection (linear time) rather than by sorting them all.
func latencyPercentiles(_ nanos: [UInt64]) -> (p50: Double, p99: Double) {
    guard !nanos.isEmpty else { return (0, 0) }
    var values = nanos
    let count = values.count
    func rank(_ fraction: Double) -> Int { min(count - 1, Int((Double(count) * fraction).rounded(.down))) }
    let p50 = rank(0.50), p99 = rank(0.99)
    values.withUnsafeMutableBufferPointer { buffer in
        select(p50, in: buffer, from: 0, to: count)
        // Everything after p50 is no smaller than it: p99 is among them.
        select(p99, in: buffer, from: p50, to: count)
    }
    return (Double(values[p50]) / 1e6, Double(values[p99]) / 1e6)
}

/// Rearranges `buffer[low..<high]` so that position `k` holds the value a sort would put there, the smaller ones
/// before it and the others after (quickselect, a median-of-three pivot).
private func select(_ k: Int, in buffer: UnsafeMutableBufferPointer<UInt64>, from low: Int, to high: Int) {
    var low = low, high = high - 1
    while low < high {
        let middle = low + (high - low) / 2
        if buffer[middle] < buffer[low] { buffer.swapAt(middle, low) }
        if buffer[high] < buffer[low] { buffer.swapAt(high, low) }
        if buffer[high] < buffer[middle] { buffer.swapAt(high, middle) }
        let pivot = buffer[middle]
        var i = low, j = high
        while i <= j {
            while buffer[i] < pivot { i += 1 }
            while pivot < buffer[j] { j -= 1 }
            if i <= j {
                buffer.swapAt(i, j)
                i += 1
                j -= 1
            }
        }
        if k <= j {
            high = j
        } else if k >= i {
            low = i
        } else {
            return
        }
    }
}
