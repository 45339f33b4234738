/// An array kept in chunks of at most `2 * chunkSize` elements, so that inserting or removing at a position
/// moves one chunk's elements and the chunk starts, not the whole array.
///
/// A view model's state is a value held by its subject as well as by the view model, so every change of a plain
/// array there copies it whole (copy on write): O(N) for one memo. Here a change copies the chunk table (N / 1024
/// entries) and one chunk. Finding a position is a binary search over the chunk starts.
struct ChunkedArray<Element> {
    static var chunkSize: Int { 1024 }

    private(set) var chunks: [[Element]] = []
    /// `starts[c]` is the index of chunk c's first element.
    private var starts: [Int] = []
    private(set) var count = 0

    init() {}

    init<S: Sequence>(_ elements: S) where S.Element == Element {
        for chunk in elements.pages(of: Self.chunkSize) { append(chunk: chunk) }
    }

    /// Appends a whole chunk (building a result chunk by chunk); empty chunks are dropped.
    mutating func append(chunk: [Element]) {
        guard !chunk.isEmpty else { return }
        starts.append(count)
        chunks.append(chunk)
        count += chunk.count
    }

    /// The chunk holding `index` (or, for `index == count`, the last chunk) and the offset in it.
    private func locate(_ index: Int) -> (chunk: Int, offset: Int) {
        var low = 0
        var high = starts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if starts[mid] <= index { low = mid } else { high = mid - 1 }
        }
        return (low, index - starts[low])
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "index out of range")
            let (chunk, offset) = locate(index)
            return chunks[chunk][offset]
        }
        set {
            precondition(index >= 0 && index < count, "index out of range")
            let (chunk, offset) = locate(index)
            chunks[chunk][offset] = newValue
        }
    }

    mutating func insert(_ element: Element, at index: Int) {
        precondition(index >= 0 && index <= count, "index out of range")
        guard !chunks.isEmpty else {
            append(chunk: [element])
            return
        }
        let (chunk, offset) = locate(index)
        chunks[chunk].insert(element, at: offset)
        count += 1
        for next in (chunk + 1)..<starts.count { starts[next] += 1 }
        if chunks[chunk].count > 2 * Self.chunkSize {
            let tail = Array(chunks[chunk][Self.chunkSize...])
            chunks[chunk].removeSubrange(Self.chunkSize...)
            chunks.insert(tail, at: chunk + 1)
            starts.insert(starts[chunk] + Self.chunkSize, at: chunk + 1)
        }
    }

    @discardableResult
    mutating func remove(at index: Int) -> Element {
        precondition(index >= 0 && index < count, "index out of range")
        let (chunk, offset) = locate(index)
        let element = chunks[chunk].remove(at: offset)
        count -= 1
        for next in (chunk + 1)..<starts.count { starts[next] -= 1 }
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            starts.remove(at: chunk)
        }
        return element
    }

    /// The first index whose element is not `before(element, target)`, for elements ordered by `before`.
    func partitionIndex(where before: (Element) -> Bool) -> Int {
        // Whole chunks first (by their last element), then within the chunk.
        var low = 0
        var high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if before(chunks[mid][chunks[mid].count - 1]) { low = mid + 1 } else { high = mid }
        }
        guard low < chunks.count else { return count }
        var inLow = 0
        var inHigh = chunks[low].count
        while inLow < inHigh {
            let mid = (inLow + inHigh) / 2
            if before(chunks[low][mid]) { inLow = mid + 1 } else { inHigh = mid }
        }
        return starts[low] + inLow
    }
}

extension ChunkedArray: RandomAccessCollection {
    var startIndex: Int { 0 }
    var endIndex: Int { count }

    /// Walks chunk by chunk: no search per element.
    func makeIterator() -> FlattenSequence<[[Element]]>.Iterator { chunks.joined().makeIterator() }
}

extension ChunkedArray: Sendable where Element: Sendable {}

extension ChunkedArray: Equatable where Element: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }
}

extension ChunkedArray: Hashable where Element: Hashable {
    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for element in self { hasher.combine(element) }
    }
}

extension ChunkedArray {
    /// The index of the first element that satisfies `predicate`, walking chunk by chunk.
    func firstOffset(where predicate: (Element) -> Bool) -> Int? {
        for (number, chunk) in chunks.enumerated() {
            if let offset = chunk.firstIndex(where: predicate) { return starts[number] + offset }
        }
        return nil
    }
}
