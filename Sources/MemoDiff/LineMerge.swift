/// What a three-way merge gives: the merged text, or the text with its conflicts marked.
public enum MergeResult: Sendable, Equatable, CustomStringConvertible {
    /// Every change merged; the merged text.
    case clean(String)
    /// `count` regions where both sides changed the same lines differently, each marked in the text as git marks
    /// them: `<<<<<<< ours-label`, our lines, `=======`, their lines, `>>>>>>> theirs-label`.
    case conflicts(marked: String, count: Int)

    /// Equal when the same case holds the same UTF-8 bytes (not canonical equivalence).
    public static func == (a: MergeResult, b: MergeResult) -> Bool {
        switch (a, b) {
        case (.clean(let x), .clean(let y)): x.utf8.elementsEqual(y.utf8)
        case (.conflicts(let x, let m), .conflicts(let y, let n)): m == n && x.utf8.elementsEqual(y.utf8)
        default: false
        }
    }

    /// The merged text, or the marked one.
    public var text: String {
        switch self {
        case .clean(let text): text
        case .conflicts(let marked, _): marked
        }
    }

    public var description: String {
        switch self {
        case .clean(let text): "clean(\(text.debugDescription))"
        case .conflicts(let marked, let count): "conflicts(\(count), \(marked.debugDescription))"
        }
    }
}

/// Three-way merge of lines, with diff3's rules as `git merge-file` applies them.
///
/// Both sides are diffed against the base (`LineDiff`). A change only one side made is taken. Changes of the two
/// sides that overlap, or that touch (one ends on the line where the other starts, an insertion at the edge of
/// the other's change, or two insertions at one place), form one region: when both sides give that region the
/// same bytes it is taken once, otherwise it is a conflict. So edits of adjacent lines conflict, as in git
/// (`git merge-file` treats them so: nothing tells which order the two edits of neighbouring lines should read
/// in), and only edits with at least one unchanged line between them merge.
///
/// A conflict keeps outside its marks the lines both sides agree on at its start and at its end (git's
/// "zealous" merge does the same), and lines without a newline get one before a mark. The clean text is
/// byte-for-byte what `git merge-file -p ours base theirs` prints, and a merge is clean exactly when git's is;
/// git may cut one marked region into several where the sides agree on lines in its middle, so marked texts
/// and counts can differ from git's.
public enum LineMerge {
    /// Merges `ours` and `theirs`, two edits of `base`.
    /// - Parameters:
    ///   - oursLabel: written after `<<<<<<<` (git writes the file name, or `-L`'s).
    ///   - theirsLabel: written after `>>>>>>>`.
    ///   - workLimit: each diff's step budget (`LineDiff`); past it a diff replaces its differing region whole,
    ///     which can turn a merge into a conflict, never into a wrong merge.
    public static func merge(
        base: String, ours: String, theirs: String, oursLabel: String = "ours", theirsLabel: String = "theirs",
        workLimit: Int = LineDiff.defaultWorkLimit
    ) -> MergeResult {
        let baseLines = TextLines(base)
        let oursLines = TextLines(ours)
        let theirsLines = TextLines(theirs)
        let toOurs = LineDiff(old: baseLines, new: oursLines, workLimit: workLimit).edits
        let toTheirs = LineDiff(old: baseLines, new: theirsLines, workLimit: workLimit).edits
        var out: [UInt8] = []
        out.reserveCapacity(max(ours.utf8.count, theirs.utf8.count))
        var conflicts = 0
        var baseAt = 0
        var i = 0
        var j = 0
        while i < toOurs.count || j < toTheirs.count {
            // A region: the next change of either side, with every change of the other side that overlaps or
            // touches it, and so on (a change of one side never touches another of the same side).
            let oursFirst = i
            let theirsFirst = j
            let start: Int
            var end: Int
            if j == toTheirs.count || (i < toOurs.count && toOurs[i].old.lowerBound <= toTheirs[j].old.lowerBound) {
                start = toOurs[i].old.lowerBound
                end = toOurs[i].old.upperBound
                i += 1
            } else {
                start = toTheirs[j].old.lowerBound
                end = toTheirs[j].old.upperBound
                j += 1
            }
            while true {
                if i < toOurs.count && toOurs[i].old.lowerBound <= end {
                    end = max(end, toOurs[i].old.upperBound)
                    i += 1
                } else if j < toTheirs.count && toTheirs[j].old.lowerBound <= end {
                    end = max(end, toTheirs[j].old.upperBound)
                    j += 1
                } else {
                    break
                }
            }
            out.append(contentsOf: baseLines.bytes(of: baseAt..<start))
            baseAt = end
            let oursPart = part(of: oursLines, edits: toOurs[oursFirst..<i], base: start..<end)
            let theirsPart = part(of: theirsLines, edits: toTheirs[theirsFirst..<j], base: start..<end)
            switch (oursPart, theirsPart) {
            case (let ours?, let theirs?) where !ours.bytes.elementsEqual(theirs.bytes):
                conflicts += 1
                appendConflict(ours: ours, theirs: theirs, oursLabel: oursLabel, theirsLabel: theirsLabel, to: &out)
            case (let only?, _), (nil, let only?):
                out.append(contentsOf: only.bytes)
            case (nil, nil):
                break  // a region starts with a change of one side
            }
        }
        out.append(contentsOf: baseLines.bytes(of: baseAt..<baseLines.count))
        let text = String(decoding: out, as: UTF8.self)
        return conflicts == 0 ? .clean(text) : .conflicts(marked: text, count: conflicts)
    }

    /// One side's lines for the base lines `base`, from that side's edits inside it; nil when it has none there.
    private static func part(of lines: TextLines, edits: ArraySlice<LineEdit>, base: Range<Int>) -> Part? {
        guard let first = edits.first, let last = edits.last else { return nil }
        let start = first.new.lowerBound - (first.old.lowerBound - base.lowerBound)
        let end = last.new.upperBound + (base.upperBound - last.old.upperBound)
        return Part(lines: lines, range: start..<end)
    }

    /// Lines `range` of one text.
    private struct Part {
        let lines: TextLines
        let range: Range<Int>
        var bytes: ArraySlice<UInt8> { lines.bytes(of: range) }
    }

    /// The marked conflict, with the lines both sides start and end with kept outside the marks.
    private static func appendConflict(
        ours: Part, theirs: Part, oursLabel: String, theirsLabel: String, to out: inout [UInt8]
    ) {
        var oursRange = ours.range
        var theirsRange = theirs.range
        while !oursRange.isEmpty && !theirsRange.isEmpty
            && ours.lines[oursRange.lowerBound] == theirs.lines[theirsRange.lowerBound]
        {
            out.append(contentsOf: ours.lines[oursRange.lowerBound])
            oursRange = (oursRange.lowerBound + 1)..<oursRange.upperBound
            theirsRange = (theirsRange.lowerBound + 1)..<theirsRange.upperBound
        }
        var suffix = 0
        while suffix < min(oursRange.count, theirsRange.count)
            && ours.lines[oursRange.upperBound - 1 - suffix] == theirs.lines[theirsRange.upperBound - 1 - suffix]
        {
            suffix += 1
        }
        oursRange = oursRange.lowerBound..<(oursRange.upperBound - suffix)
        theirsRange = theirsRange.lowerBound..<(theirsRange.upperBound - suffix)
        out.append(contentsOf: marker("<<<<<<<", oursLabel))
        appendEndingInNewline(ours.lines.bytes(of: oursRange), to: &out)
        out.append(contentsOf: "=======\n".utf8)
        appendEndingInNewline(theirs.lines.bytes(of: theirsRange), to: &out)
        out.append(contentsOf: marker(">>>>>>>", theirsLabel))
        out.append(contentsOf: ours.lines.bytes(of: oursRange.upperBound..<(oursRange.upperBound + suffix)))
    }

    private static func marker(_ mark: String, _ label: String) -> String.UTF8View {
        (label.isEmpty ? "\(mark)\n" : "\(mark) \(label)\n").utf8
    }

    private static func appendEndingInNewline(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        out.append(contentsOf: bytes)
        if let last = bytes.last, last != UInt8(ascii: "\n") { out.append(UInt8(ascii: "\n")) }
    }
}
