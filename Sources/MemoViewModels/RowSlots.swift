import MemoModel
/// The list's rows, each in a slot that stays its own while the memo is listed, so that the lists of every row and
/// of the visible rows hold 4-byte slot numbers instead of copies of the rows.
///
/// A filter keystroke at 1,000,000 memos copied about half a million 64-byte rows into its result (retaining each
/// content), and the keystroke after it released them all: most of its time was the result's fresh pages and that
/// reference counting, not the search. A slot number is copied and dropped for nothing.
///
/// Slots live in pages of 1,024, so that a change copies one page and the page table, not every row: the state
/// that holds them is a value its subject holds too (copy on write). A removed memo's slot is reused by the next
/// one added.
struct RowSlots: Sendable {
    private static var pageSize: Int { 1024 }

    private var pages: [[ListRow]] = []
    /// Slots whose memo was removed, taken by the next ones added.
    private var free: [Int32] = []

    init() {}

    /// Slots 0, 1, 2... for `rows`, in order.
    init<S: Sequence>(_ rows: S) where S.Element == ListRow {
        pages = rows.pages(of: Self.pageSize)
    }

    /// How many slots have been made (the free ones too).
    var capacity: Int { pages.isEmpty ? 0 : (pages.count - 1) * Self.pageSize + pages[pages.count - 1].count }

    subscript(slot: Int32) -> ListRow {
        get { pages[Int(slot) / Self.pageSize][Int(slot) % Self.pageSize] }
        set { pages[Int(slot) / Self.pageSize][Int(slot) % Self.pageSize] = newValue }
    }

    /// Puts `row` in a free slot (or a new one) and returns its number.
    mutating func add(_ row: ListRow) -> Int32 {
        if let slot = free.popLast() {
            self[slot] = row
            return slot
        }
        let slot = Int32(capacity)
        if pages.isEmpty || pages[pages.count - 1].count == Self.pageSize {
            var page: [ListRow] = []
            page.reserveCapacity(Self.pageSize)
            pages.append(page)
        }
        pages[pages.count - 1].append(row)
        return slot
    }

    /// Frees `slot` (its memo's content is released now, not when the slot is reused).
    mutating func remove(_ slot: Int32) {
        self[slot] = ListRow.vacant
        free.append(slot)
    }

    /// Whether the row in `slot` holds `needle`, read in place (no copy of the row, no reference counting).
    func matches(_ slot: Int32, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        pages[Int(slot) / Self.pageSize].withUnsafeBufferPointer { $0[Int(slot) % Self.pageSize].matches(needle) }
    }
}
