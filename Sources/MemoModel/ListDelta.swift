import Foundation

/// One step of a list kept newest first, at a position in the list as it stands when the step is applied.
public enum ListEdit: Sendable, Hashable {
    /// `memo` is inserted at `at`; the memos from there on move down one.
    case insert(Memo, at: Int)
    /// The memo at `at` is replaced by `memo` (same id, same place in the order).
    case update(Memo, at: Int)
    /// The memo at `at` (which is `memo`) goes away.
    case remove(Memo, at: Int)
}

/// What a list watcher receives: the whole list once (and again after a store rebuilt its list), then edits.
public enum ListDelta: Sendable, Hashable {
    /// Every memo, newest first: the list starts again from this.
    case reset([Memo])
    /// Edits applied in order; each position counts in the list as the edits before it left it.
    case edits([ListEdit])

    /// The edits that turn one state of a list into another, given where each memo that may have moved stood
    /// before and stands after (a memo absent from `before` was not listed, absent from `after` is gone).
    ///
    /// Removals come first, from the bottom up, at the old positions; then insertions from the top down at the
    /// new positions (every memo above a new position is then already in place); updates last, at the new
    /// positions. Memos whose place in the order did not change keep their relative order, so this is exact.
    /// - Parameters:
    ///   - before: id to (memo, position) in the old list, for every memo that may have changed.
    ///   - after: the same ids in the new list.
    public static func edits(
        before: [UUID: (memo: Memo, position: Int)], after: [UUID: (memo: Memo, position: Int)]
    ) -> [ListEdit] {
        var removals: [(Memo, Int)] = []
        var insertions: [(Memo, Int)] = []
        var updates: [ListEdit] = []
        for (id, old) in before {
            if let new = after[id], !new.memo.isNewer(than: old.memo), !old.memo.isNewer(than: new.memo) {
                if new.memo != old.memo { updates.append(.update(new.memo, at: new.position)) }
            } else {
                removals.append((old.memo, old.position))
            }
        }
        for (id, new) in after {
            if let old = before[id], !new.memo.isNewer(than: old.memo), !old.memo.isNewer(than: new.memo) {
                continue
            }
            insertions.append((new.memo, new.position))
        }
        removals.sort { $0.1 > $1.1 }
        insertions.sort { $0.1 < $1.1 }
        return removals.map { .remove($0.0, at: $0.1) } + insertions.map { .insert($0.0, at: $0.1) } + updates
    }
}

extension Memo {
    /// Whether this memo comes before `other` in a list, newest first: a later insert date, then (for the same
    /// date) the larger id read as 16 big-endian bytes. Every store orders its list this way.
    public func isNewer(than other: Memo) -> Bool {
        if insertMicros != other.insertMicros { return insertMicros > other.insertMicros }
        let mine = id.orderingValue
        let theirs = other.id.orderingValue
        return mine.0 != theirs.0 ? mine.0 > theirs.0 : mine.1 > theirs.1
    }
}
