import Synchronization

/// A handle to a scheduled timer; `cancel()` from any thread.
public final class TimerHandle: Sendable {
    private static let pending: UInt8 = 0
    private static let cancelled: UInt8 = 1
    private static let fired: UInt8 = 2

    private let state = Atomic<UInt8>(TimerHandle.pending)
    private let cancellations: Cancellations

    init(_ cancellations: Cancellations) {
        self.cancellations = cancellations
    }

    /// Stops the timer from firing.
    ///
    /// On the timer's loop thread the answer is exact. From another thread the timer may be firing at this very
    /// moment; then the answer is false and the work runs (or is running).
    /// - Returns: true when the timer was still pending and now never fires.
    @discardableResult
    public func cancel() -> Bool {
        let (exchanged, _) = state.compareExchange(
            expected: TimerHandle.pending, desired: TimerHandle.cancelled, ordering: .acquiringAndReleasing
        )
        if exchanged { cancellations.count.add(1, ordering: .relaxed) }
        return exchanged
    }

    /// True once `cancel()` has stopped the timer.
    public var isCancelled: Bool {
        state.load(ordering: .acquiring) == TimerHandle.cancelled
    }

    /// Claims the right to fire; false when cancelled first.
    func claimFiring() -> Bool {
        state.compareExchange(
            expected: TimerHandle.pending, desired: TimerHandle.fired, ordering: .acquiringAndReleasing
        ).exchanged
    }
}

/// How many timers of a loop were cancelled since the heap was last compacted (an estimate, for compaction).
final class Cancellations: Sendable {
    let count = Atomic<Int>(0)
}

/// A binary min-heap of timers ordered by deadline, then by scheduling order. Cancelled timers stay in the heap
/// until they reach the top or the heap is compacted, so `cancel()` is O(1) and needs no lock.
///
/// Touched only on its loop's thread.
struct TimerHeap {
    struct Entry {
        let deadline: UInt64
        let sequence: UInt64
        let handle: TimerHandle
        let work: () -> Void

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private(set) var entries: [Entry] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var sequenceMark: UInt64 { nextSequence }

    /// The earliest deadline, cancelled timers included (waking early for one is harmless).
    var nextDeadline: UInt64? { entries.first?.deadline }

    mutating func insert(deadline: UInt64, handle: TimerHandle, work: @escaping () -> Void) {
        entries.append(Entry(deadline: deadline, sequence: nextSequence, handle: handle, work: work))
        nextSequence &+= 1
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest timer if it is due at `now` and was scheduled before `mark`.
    /// Timers scheduled while firing wait for the next pass, so a timer that reschedules itself with a zero delay
    /// cannot starve the loop.
    mutating func popDue(now: UInt64, before mark: UInt64) -> Entry? {
        guard let first = entries.first, first.deadline <= now, first.sequence < mark else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }

    /// Drops cancelled timers and rebuilds the heap, in O(n).
    mutating func removeCancelled() {
        entries.removeAll { $0.handle.isCancelled }
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = entries.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            var smallest = left
            if right < count && entries[right].precedes(entries[left]) { smallest = right }
            guard entries[smallest].precedes(entries[parent]) else { return }
            entries.swapAt(smallest, parent)
            parent = smallest
        }
    }
}
