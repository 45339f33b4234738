/// One change between two texts: the old text's lines `old` are replaced by the new text's lines `new`.
///
/// Either range may be empty (an insertion or a deletion), never both. Consecutive edits of one diff are
/// separated by at least one unchanged line.
public struct LineEdit: Hashable, Sendable {
    /// The old text's lines this edit removes (empty for an insertion: it goes before line `old.lowerBound`).
    public let old: Range<Int>
    /// The new text's lines this edit puts in their place.
    public let new: Range<Int>

    public init(old: Range<Int>, new: Range<Int>) {
        self.old = old
        self.new = new
    }
}

/// The line difference of two texts: Myers' O(ND) algorithm, in linear memory, lines compared as UTF-8 bytes.
///
/// The edit script is a shortest one (fewest lines removed plus added), found with the middle-snake
/// divide-and-conquer of Myers' "An O(ND) Difference Algorithm and Its Variations" (1986), section 4b, as GNU
/// diff and git do: memory is O(N + M) and time O((N + M) · D) for texts of N and M lines that differ in D lines.
/// Before the search, lines that cannot match are set aside as git's xdiff sets them aside (see `MyersSearch`;
/// a line that occurs many times, set aside among unmatched ones, can make the script a little longer than the
/// shortest, exactly as it does in git).
/// Among scripts of the same length, each run of changed lines is then slid as far down as it can go and back up
/// to line up with a change in the other text (GNU diff's `shift_boundaries`, git's `xdl_change_compact`
/// without the indent heuristic), so that the hunks read as `diff -u` and `git diff` print them.
///
/// **Bounded work.** Before searching, the common first and last lines are set aside (that costs O(N + M) and
/// leaves only the region that differs). The search then counts its steps (each diagonal visited and each line
/// compared along a snake); when the count passes `workLimit` it stops, and the whole differing region becomes one
/// edit that replaces all its old lines by all its new ones. The result is still a correct diff (applying it to
/// the old text gives the new one) but no longer a shortest one, and `isComplete` is false. A merge built on such
/// a diff sees one large change, so a concurrent edit anywhere in that region conflicts instead of merging: the
/// limit can cost a merge, never a wrong one. The default limit (`defaultWorkLimit`, 4 million steps) keeps a
/// diff of two 64 KiB texts under 0.1 s in a release build on this project's 2-core machine (60 KB of 16,000
/// short lines reordered, which reaches the limit: 76 ms; 8,000 lines with 200 lines changed: 9-23 ms, exact),
/// and is far above what two versions of a memo that differ in a few hundred lines need.
public struct LineDiff: Sendable {
    /// The search's default step budget: past it, the differing region is replaced whole.
    public static let defaultWorkLimit = 4_000_000

    /// The old text's lines.
    public let old: TextLines
    /// The new text's lines.
    public let new: TextLines
    /// The changes, in order of position; empty when the texts have the same bytes.
    public let edits: [LineEdit]
    /// True when the search finished within its work limit; false when it stopped and the differing region was
    /// replaced whole.
    public let isComplete: Bool

    /// Diffs two texts line by line.
    /// - Parameter workLimit: the search's step budget (see the type's documentation).
    public init(old: String, new: String, workLimit: Int = LineDiff.defaultWorkLimit) {
        self.init(old: TextLines(old), new: TextLines(new), workLimit: workLimit)
    }

    /// Diffs two texts already cut into lines.
    public init(old: TextLines, new: TextLines, workLimit: Int = LineDiff.defaultWorkLimit) {
        var numbering = LineNumbering()
        let a = numbering.number(old)
        let b = numbering.number(new)
        var search = MyersSearch(a: a, b: b, workLimit: workLimit)
        isComplete = search.run()
        var changedA = search.changedA
        var changedB = search.changedB
        Compaction.compact(&changedA, lines: a, other: changedB)
        Compaction.compact(&changedB, lines: b, other: changedA)
        self.old = old
        self.new = new
        edits = Self.edits(changedA: changedA, changedB: changedB)
    }

    /// The number of lines removed plus the number added.
    public var changedLineCount: Int {
        edits.reduce(0) { $0 + $1.old.count + $1.new.count }
    }

    /// Runs of changed lines, paired: the unchanged lines between them correspond one to one.
    private static func edits(changedA: [Bool], changedB: [Bool]) -> [LineEdit] {
        var edits: [LineEdit] = []
        var i = 0
        var j = 0
        while i < changedA.count || j < changedB.count {
            if (i < changedA.count && changedA[i]) || (j < changedB.count && changedB[j]) {
                let oldStart = i
                let newStart = j
                while i < changedA.count && changedA[i] { i += 1 }
                while j < changedB.count && changedB[j] { j += 1 }
                edits.append(LineEdit(old: oldStart..<i, new: newStart..<j))
            } else {
                i += 1
                j += 1
            }
        }
        return edits
    }
}

/// The middle-snake search over line numbers; marks the lines not in the common subsequence it finds.
///
/// As git's xdiff does before its search (`xdl_trim_ends`, `xdl_cleanup_records`), the common first and last
/// lines are set aside, and so are the lines of the region left that cannot be matched: a line the other text
/// does not have at all, and a line the other text has many times when it sits among such unmatched lines. The
/// search then runs over the lines left. This costs nothing in length (set-aside lines of the first kind are
/// changed in every script; the second kind only when lines around it are) and it is what makes the
/// search take, among scripts of one length, the one git takes, so that merges agree with `git merge-file`.
struct MyersSearch {
    /// The lines searched (the differing region less the lines set aside), and each one's index in its text.
    private var a: [Int32] = []
    private var b: [Int32] = []
    private var indexA: [Int] = []
    private var indexB: [Int] = []
    private(set) var changedA: [Bool]
    private(set) var changedB: [Bool]
    /// The region that differs, once the common first and last lines are set aside.
    private var region: (x: Range<Int>, y: Range<Int>)
    /// The furthest x reached on each diagonal k = x - y, forward and backward, at index k + `diagonalOffset`.
    private var forward: [Int] = []
    private var backward: [Int] = []
    private var diagonalOffset = 0
    private var work = 0
    private let workLimit: Int

    init(a fullA: [Int32], b fullB: [Int32], workLimit: Int) {
        self.workLimit = workLimit
        changedA = Array(repeating: false, count: fullA.count)
        changedB = Array(repeating: false, count: fullB.count)
        var xLow = 0
        var yLow = 0
        var xHigh = fullA.count
        var yHigh = fullB.count
        while xLow < xHigh && yLow < yHigh && fullA[xLow] == fullB[yLow] {
            xLow += 1
            yLow += 1
        }
        while xLow < xHigh && yLow < yHigh && fullA[xHigh - 1] == fullB[yHigh - 1] {
            xHigh -= 1
            yHigh -= 1
        }
        region = (xLow..<xHigh, yLow..<yHigh)
        // How often each line occurs in each whole text.
        var inA: [Int32: Int] = [:]
        var inB: [Int32: Int] = [:]
        for line in fullA { inA[line, default: 0] += 1 }
        for line in fullB { inB[line, default: 0] += 1 }
        (a, indexA) = Self.searched(fullA, xLow..<xHigh, matches: inB, &changedA)
        (b, indexB) = Self.searched(fullB, yLow..<yHigh, matches: inA, &changedB)
        // Diagonals run from -b.count to a.count, and the search reads one past each end.
        forward = Array(repeating: 0, count: a.count + b.count + 3)
        backward = forward
        diagonalOffset = b.count + 1
    }

    /// The lines of `range` the search needs, with their indexes; the others are marked changed.
    private static func searched(
        _ lines: [Int32], _ range: Range<Int>, matches: [Int32: Int], _ changed: inout [Bool]
    ) -> ([Int32], [Int]) {
        // Per line: 0 has no match in the other text, 1 a few, 2 many (git's `dis`, and its limit, about the
        // square root of the text's length, at most 1024).
        var sqrt = 1
        var n = lines.count
        while n > 0 {
            sqrt <<= 1
            n >>= 2
        }
        let many = min(sqrt, 1024)
        var kind = [UInt8](repeating: 0, count: range.count)
        for index in range {
            let count = matches[lines[index]] ?? 0
            kind[index - range.lowerBound] = count == 0 ? 0 : count >= many ? 2 : 1
        }
        var kept: [Int32] = []
        var indexes: [Int] = []
        for index in range {
            let k = kind[index - range.lowerBound]
            if k == 1 || (k == 2 && !amongUnmatched(kind, index - range.lowerBound)) {
                kept.append(lines[index])
                indexes.append(index)
            } else {
                changed[index] = true
            }
        }
        return (kept, indexes)
    }

    /// Whether a line with many matches sits in a run of unmatched and many-matched lines that is mostly
    /// unmatched (git's `xdl_clean_mmatch`, looking at most 100 lines each way).
    private static func amongUnmatched(_ kind: [UInt8], _ i: Int) -> Bool {
        let start = max(0, i - 100)
        let end = min(kind.count - 1, i + 100)
        var unmatchedBefore = 0
        var manyBefore = 1
        var r = 1
        while i - r >= start {
            if kind[i - r] == 0 { unmatchedBefore += 1 } else if kind[i - r] == 2 { manyBefore += 1 } else { break }
            r += 1
        }
        if unmatchedBefore == 0 { return false }
        var unmatchedAfter = 0
        var manyAfter = 1
        r = 1
        while i + r <= end {
            if kind[i + r] == 0 { unmatchedAfter += 1 } else if kind[i + r] == 2 { manyAfter += 1 } else { break }
            r += 1
        }
        if unmatchedAfter == 0 { return false }
        let unmatched = unmatchedBefore + unmatchedAfter
        let many = manyBefore + manyAfter
        return many * 4 < many + unmatched
    }

    /// Marks the changed lines. - Returns: false when the work limit stopped the search (the region that
    /// differs is then marked changed whole).
    mutating func run() -> Bool {
        if compare(0, a.count, 0, b.count) { return true }
        for x in region.x { changedA[x] = true }
        for y in region.y { changedB[y] = true }
        return false
    }

    /// Marks the changes between a[xLow..<xHigh] and b[yLow..<yHigh]. - Returns: false past the work limit.
    private mutating func compare(_ xLow: Int, _ xHigh: Int, _ yLow: Int, _ yHigh: Int) -> Bool {
        var xLow = xLow
        var yLow = yLow
        var xHigh = xHigh
        var yHigh = yHigh
        while xLow < xHigh && yLow < yHigh && a[xLow] == b[yLow] {
            xLow += 1
            yLow += 1
        }
        while xLow < xHigh && yLow < yHigh && a[xHigh - 1] == b[yHigh - 1] {
            xHigh -= 1
            yHigh -= 1
        }
        if xLow == xHigh {
            for y in yLow..<yHigh { changedB[indexB[y]] = true }
            return true
        }
        if yLow == yHigh {
            for x in xLow..<xHigh { changedA[indexA[x]] = true }
            return true
        }
        // Both sides are non-empty and differ at both ends, so D >= 2 and each half costs less than the whole:
        // the recursion ends.
        guard let (x, y) = middleSnake(xLow, xHigh, yLow, yHigh) else { return false }
        return compare(xLow, x, yLow, y) && compare(x, xHigh, y, yHigh)
    }

    /// A point on a shortest edit path from (xLow, yLow) to (xHigh, yHigh), about halfway in edits; nil past the
    /// work limit. Forward and backward searches alternate, one edit further each time, until they overlap.
    private mutating func middleSnake(_ xLow: Int, _ xHigh: Int, _ yLow: Int, _ yHigh: Int) -> (Int, Int)? {
        let o = diagonalOffset
        let dMin = xLow - yHigh
        let dMax = xHigh - yLow
        let fMid = xLow - yLow
        let bMid = xHigh - yHigh
        var fMin = fMid
        var fMax = fMid
        var bMin = bMid
        var bMax = bMid
        let odd = (fMid - bMid) & 1 != 0
        forward[fMid + o] = xLow
        backward[bMid + o] = xHigh
        while true {
            // Forward: every diagonal one edit further.
            if fMin > dMin {
                fMin -= 1
                forward[fMin - 1 + o] = -1
            } else {
                fMin += 1
            }
            if fMax < dMax {
                fMax += 1
                forward[fMax + 1 + o] = -1
            } else {
                fMax -= 1
            }
            var d = fMax
            while d >= fMin {
                let low = forward[d - 1 + o]
                let high = forward[d + 1 + o]
                var x = low >= high ? low + 1 : high
                var y = x - d
                let start = x
                while x < xHigh && y < yHigh && a[x] == b[y] {
                    x += 1
                    y += 1
                }
                work += 1 + x - start
                forward[d + o] = x
                if odd && bMin <= d && d <= bMax && backward[d + o] <= x { return (x, y) }
                d -= 2
            }
            // Backward, the same from the end.
            if bMin > dMin {
                bMin -= 1
                backward[bMin - 1 + o] = Int.max
            } else {
                bMin += 1
            }
            if bMax < dMax {
                bMax += 1
                backward[bMax + 1 + o] = Int.max
            } else {
                bMax -= 1
            }
            d = bMax
            while d >= bMin {
                let low = backward[d - 1 + o]
                let high = backward[d + 1 + o]
                var x = low < high ? low : high - 1
                var y = x - d
                let start = x
                while x > xLow && y > yLow && a[x - 1] == b[y - 1] {
                    x -= 1
                    y -= 1
                }
                work += 1 + start - x
                backward[d + o] = x
                if !odd && fMin <= d && d <= fMax && x <= forward[d + o] { return (x, y) }
                d -= 2
            }
            if work > workLimit { return nil }
        }
    }
}

/// Slides each run of changed lines down as far as it goes, then back up to the last place where it lines up
/// with a run of changes in the other text; runs that meet while sliding join. This is git's
/// `xdl_change_compact` without the indent heuristic (GNU diff's `shift_boundaries` does the same), so a
/// change among repeated lines lands where `diff -u` and `git merge-file` put it.
enum Compaction {
    /// A run of changed lines `start..<end` in one text (possibly empty: the place between two unchanged lines).
    private struct Group {
        var start = 0
        var end = 0
    }

    static func compact(_ changed: inout [Bool], lines: [Int32], other: [Bool]) {
        let count = changed.count
        var group = Group()
        var otherGroup = Group()
        func first(_ flags: [Bool], _ group: inout Group) {
            group.start = 0
            group.end = 0
            while group.end < flags.count && flags[group.end] { group.end += 1 }
        }
        func next(_ flags: [Bool], _ group: inout Group) -> Bool {
            if group.end == flags.count { return false }
            group.start = group.end + 1
            group.end = group.start
            while group.end < flags.count && flags[group.end] { group.end += 1 }
            return true
        }
        func previous(_ flags: [Bool], _ group: inout Group) -> Bool {
            if group.start == 0 { return false }
            group.end = group.start - 1
            group.start = group.end
            while group.start > 0 && flags[group.start - 1] { group.start -= 1 }
            return true
        }
        func slideDown(_ group: inout Group) -> Bool {
            guard group.end < count && lines[group.start] == lines[group.end] else { return false }
            changed[group.start] = false
            changed[group.end] = true
            group.start += 1
            group.end += 1
            while group.end < count && changed[group.end] { group.end += 1 }
            return true
        }
        func slideUp(_ group: inout Group) -> Bool {
            guard group.start > 0 && lines[group.start - 1] == lines[group.end - 1] else { return false }
            group.start -= 1
            group.end -= 1
            changed[group.start] = true
            changed[group.end] = false
            while group.start > 0 && changed[group.start - 1] { group.start -= 1 }
            return true
        }

        first(changed, &group)
        first(other, &otherGroup)
        while true {
            if group.end != group.start {
                var size: Int
                var earliestEnd: Int
                var endMatchingOther: Int
                repeat {
                    size = group.end - group.start
                    endMatchingOther = -1
                    while slideUp(&group) { _ = previous(other, &otherGroup) }
                    earliestEnd = group.end
                    if otherGroup.end > otherGroup.start { endMatchingOther = group.end }
                    while slideDown(&group) {
                        _ = next(other, &otherGroup)
                        if otherGroup.end > otherGroup.start { endMatchingOther = group.end }
                    }
                } while size != group.end - group.start
                if group.end != earliestEnd && endMatchingOther != -1 {
                    while otherGroup.end == otherGroup.start {
                        guard slideUp(&group) else { break }
                        _ = previous(other, &otherGroup)
                    }
                }
            }
            guard next(changed, &group) else { break }
            _ = next(other, &otherGroup)
        }
    }
}
