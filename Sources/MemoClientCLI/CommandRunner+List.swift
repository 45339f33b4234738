import MemoClient
import MemoModel
/// `list`: the whole list in one answer, or (with `--limit` or `--after`) pages the server cuts from its ordered
/// table, so that `list --limit 10` costs the server ten memos, not the whole list.
extension CommandRunner {
    /// How many memos a page holds while `--filter` looks for matches: the filter is the client's, so the
    /// server's pages are read until the limit is met.
    static let filterPageSize = 500

    func list(filter: String?, limit: Int?, after: ListCursor?, _ client: MemoConnection) async throws {
        let needle = filter.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        func matches(_ memo: Memo) -> Bool { needle.map { memo.content.lowercased().contains($0) } ?? true }
        guard limit != nil || after != nil else {
            printList(try await client.list().memos.filter(matches))
            return
        }
        var printed = 0
        var cursor = after
        var next: ListCursor?
        reading: while true {
            let wanted = limit.map { $0 - printed } ?? 0  // 0: no limit
            let size = needle == nil ? wanted : (wanted == 0 ? 0 : max(wanted, Self.filterPageSize))
            let page: ListPage
            do {
                page = try await client.listPage(limit: UInt32(clamping: size), after: cursor)
            } catch let old as ServerTooOldError {
                throw InputError(
                    "the server at \(old.server) speaks protocol version \(old.speaks), which has no paged list: "
                        + "--limit and --after need a memo-server of protocol version \(old.needs) or later (list "
                        + "without them reads every memo)")
            }
            for (index, memo) in page.memos.enumerated() where matches(memo) {
                out.line(formatter.line(memo))
                printed += 1
                if let limit, printed == limit {
                    // The next page starts after the last memo printed, if any memo is listed after it.
                    if index < page.memos.count - 1 || page.more { next = ListCursor(after: memo) }
                    break reading
                }
            }
            guard page.more, let last = page.memos.last else { break }
            cursor = ListCursor(after: last)
        }
        if printed == 0, style.human, !style.json { out.line("(no memos)") }
        printNext(next)
    }

    /// Where the next page starts: JSON's last line `{"next":"CURSOR"}` (`{"next":null}` at the end of the list);
    /// in every other form `next<TAB>CURSOR` on stderr, and nothing at the end, so that stdout holds only memos.
    private func printNext(_ next: ListCursor?) {
        if style.json {
            out.line("{\"next\":" + (next.map { "\"" + $0.token + "\"" } ?? "null") + "}")
            return
        }
        guard let next else { return }
        out.flush()
        err.line("next\t" + next.token)
        err.flush()
    }
}
