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
            let offset = (WireProtocol.headerSize...(frame.count - 16)).first { frame[$0..<($0 + 16)].elementsEqual(wanted) }
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
