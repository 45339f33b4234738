extension Sequence {
    /// The elements in order, cut into arrays of `size` (the last one shorter; none empty), each made with room
    /// for `size`: the pages `ChunkedArray` and `RowSlots` start from.
    func pages(of size: Int) -> [[Element]] {
        precondition(size > 0, "a page holds at least one element")
        var pages: [[Element]] = []
        var page: [Element] = []
        page.reserveCapacity(size)
        for element in self {
            page.append(element)
            if page.count == size {
                pages.append(page)
                page = []
                page.reserveCapacity(size)
            }
        }
        if !page.isEmpty { pages.append(page) }
        return pages
    }
}
