import Foundation
import MemoModel
extension ListViewModel {
    /// Applies what the store's list did: a reset rebuilds the rows (folding each memo once), edits touch only the
    /// rows they name. The visible rows stay the rows that pass `shownNeedle`, in the list's order.
    static func apply(_ delta: ListDelta, to state: inout ListState) {
        switch delta {
        case .reset(let memos):
            let previous = state
            state.slots = RowSlots(memos.lazy.map(ListRow.init))
            state.all = ChunkedArray((0..<Int32(memos.count)))
            state.shown = ListFilter.filter(state.all, in: state.slots, state.shownNeedle) { false } ?? state.all
            keepSelection(&state, previous: previous)
            if let wanted = state.wantedSelection,
                state.shown.firstOffset(where: { state.memo($0).id == wanted }) != nil
            {
                state.selectedID = wanted
                state.wantedSelection = nil
            }
            if let pending = state.pendingDelete, !memos.contains(where: { $0.id == pending.id }) {
                state.pendingDelete = nil
            }
        case .edits(let edits):
            for edit in edits { apply(edit, to: &state) }
            if state.selectedID == nil { state.selectedID = state.shown.first.map { state.memo($0).id } }
        }
    }

    /// One edit: the row in its slot, the slot at its position in every memo, and the visible slot found by the
    /// memo's place in the order (both lists are newest first), in O(log N) plus one chunk.
    private static func apply(_ edit: ListEdit, to state: inout ListState) {
        switch edit {
        case .insert(let memo, let position):
            let row = ListRow(memo)
            let slot = state.slots.add(row)
            state.all.insert(slot, at: position)
            if row.matches(state.shownNeedle) {
                state.shown.insert(slot, at: shownPosition(of: memo, in: state))
                if state.wantedSelection == memo.id {
                    state.selectedID = memo.id
                    state.wantedSelection = nil
                }
            }
        case .update(let memo, let position):
            let row = ListRow(memo)
            let slot = state.all[position]
            state.slots[slot] = row
            let place = shownPosition(of: memo, in: state)
            let wasShown = place < state.shown.count && state.shown[place] == slot
            switch (wasShown, row.matches(state.shownNeedle)) {
            case (true, false): removeShown(at: place, from: &state)
            case (false, true): state.shown.insert(slot, at: place)
            case (true, true), (false, false): break
            }
        case .remove(_, let position):
            let slot = state.all.remove(at: position)
            let memo = state.memo(slot)
            let place = shownPosition(of: memo, in: state)
            if place < state.shown.count, state.shown[place] == slot {
                removeShown(at: place, from: &state)
            }
            state.slots.remove(slot)
            if state.pendingDelete?.id == memo.id { state.pendingDelete = nil }
        }
    }

    /// Where `memo` stands, or would stand, among the visible rows.
    private static func shownPosition(of memo: Memo, in state: ListState) -> Int {
        shownPosition(of: memo, in: state.shown, state.slots)
    }

    private static func shownPosition(of memo: Memo, in rows: ChunkedArray<Int32>, _ slots: RowSlots) -> Int {
        rows.partitionIndex { slots[$0].memo.isNewer(than: memo) }
    }

    /// Removes a visible row; a selection on it moves to the row that followed it (or preceded it, at the end).
    private static func removeShown(at place: Int, from state: inout ListState) {
        let removed = state.memo(state.shown.remove(at: place))
        guard state.selectedID == removed.id else { return }
        if place < state.shown.count {
            state.selectedID = state.memo(state.shown[place]).id
        } else {
            state.selectedID = place > 0 ? state.memo(state.shown[place - 1]).id : nil
        }
    }

    /// Filters again when the filter's text no longer gives `shownNeedle`. A filter that holds the old one can only
    /// narrow the result, so the visible rows are searched instead of all of them.
    /// - Returns: false when `superseded` stopped the search (the visible rows are then unchanged).
    @discardableResult
    static func refilter(_ state: inout ListState, superseded: () -> Bool = { false }) -> Bool {
        let needle = ListFilter.needle(state.filter.text)
        guard needle != state.shownNeedle else { return true }
        let narrows = ListFilter.contains(needle, state.shownNeedle)
        guard let result = ListFilter.filter(
            narrows ? state.shown : state.all, in: state.slots, needle, superseded: superseded)
        else {
            return false
        }
        let previous = state
        state.shown = result
        state.shownNeedle = needle
        keepSelection(&state, previous: previous)
        return true
    }

    /// Keeps the selection on the same memo; when that memo is no longer visible, selects the visible memo that
    /// followed it in the list (or preceded it, at the end).
    private static func keepSelection(_ state: inout ListState, previous: ListState) {
        guard let id = state.selectedID else {
            state.selectedID = state.shown.first.map { state.memo($0).id }
            return
        }
        if state.shown.firstOffset(where: { state.memo($0).id == id }) != nil { return }
        guard let old = previous.shown.firstOffset(where: { previous.memo($0).id == id }) else {
            state.selectedID = state.shown.first.map { state.memo($0).id }
            return
        }
        let place = shownPosition(of: previous.memo(previous.shown[old]), in: state)
        if place < state.shown.count {
            state.selectedID = state.memo(state.shown[place]).id
        } else {
            state.selectedID = state.shown.last.map { state.memo($0).id }
        }
    }
}
