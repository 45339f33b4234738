import Foundation
import MemoWire

// The request client's parts that run per request (BENCHMARKS.md, "memo-bench's own instructions per request"):
// it shares the machine's two cores with the server it measures, so what it spends per request lowers the rate.

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
