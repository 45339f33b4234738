/// A first-in first-out queue with amortised O(1) append and removal, for subscribers' queues and connections'
/// outbound queues. When it empties it keeps only a small buffer, so that steady one-at-a-time traffic does not
/// allocate each time and an idle queue does not hold a burst's memory.
///
/// Inlinable so that the modules that use it (the server's queues) get it specialised for their element type:
/// across the module boundary the generic code ran unspecialised, and emptying the queue after each delivery
/// (`Array.removeAll` through the runtime's generic entry point, with a metadata lookup) was the largest cost per
/// subscriber per change (BENCHMARKS.md, "Instruction counts behind the code's shape").
public struct FIFO<Element> {
    @usableFromInline var items: [Element] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { head == items.count }
    @inlinable public var count: Int { items.count - head }
    @inlinable public var first: Element? { head < items.count ? items[head] : nil }

    @inlinable public mutating func append(_ element: Element) { items.append(element) }

    /// Removes and returns the first element, if any.
    @inlinable public mutating func popFirst() -> Element? {
        guard let element = first else { return nil }
        removeFirst()
        return element
    }

    /// Removes the first element; the queue must not be empty.
    @inlinable public mutating func removeFirst() {
        precondition(head < items.count, "removeFirst on an empty FIFO")
        head += 1
        if head == items.count {
            if items.count == 1, items.capacity <= 8 {
                // One item at a time (a subscriber's change): removeLast, not removeAll's generic range
                // replacement.
                items.removeLast()
            } else {
                items.removeAll(keepingCapacity: items.capacity <= 8)
            }
            head = 0
        } else if head >= 64, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
    }

    /// Replaces the first element (a partly consumed one); the queue must not be empty.
    @inlinable public mutating func replaceFirst(_ element: Element) {
        precondition(head < items.count, "replaceFirst on an empty FIFO")
        items[head] = element
    }
}
