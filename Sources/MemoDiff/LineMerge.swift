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
/// (`git merge-file` treats them so: nothing says in which order two edits of neighbouring lines should read),
/// and only edits with at least one unchanged line between them merge.
///
/// Conflicts are then made as small as git makes them (its "zealous" level, `XDL_MERGE_ZEALOUS_ALNUM`, the one
/// `git merge-file` uses): a conflict's two sides are diffed and only their differing lines stay between marks;
/// conflicts with at most three lines between them, or only lines without a letter or digit, join into one.
/// Lines without a newline get one before a mark. The result is the bytes `git merge-file -p` prints, marks
/// and conflict count included (the labels are parameters; git's are file names or `-L`'s), as long as both
/// diffs are exact: git turns to heuristics past about 256 changed lines, and `LineDiff` replaces a region whole
/// past its work limit, so on texts that far apart the two can cut regions differently.
public enum LineMerge {
    /// Merges `ours` and `theirs`, two edits of `base`.
    /// - Parameters:
    ///   - oursLabel: written after `<<<<<<<`.
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
        var regions = self.regions(toOurs, toTheirs, oursLines, theirsLines, workLimit)
        joinCloseConflicts(&regions, oursLines)
        var out: [UInt8] = []
        out.reserveCapacity(max(ours.utf8.count, theirs.utf8.count))
        var conflicts = 0
        var oursAt = 0  // the next line of ours not yet written
        for region in regions {
            switch region.kind {
            case .ours:
                out.append(contentsOf: oursLines.bytes(of: oursAt..<region.ours.upperBound))
            case .theirs:
                out.append(contentsOf: oursLines.bytes(of: oursAt..<region.ours.lowerBound))
                out.append(contentsOf: theirsLines.bytes(of: region.theirs))
            case .same:
                continue  // both sides wrote the same: ours' lines, written with what follows
            case .conflict:
                conflicts += 1
                out.append(contentsOf: oursLines.bytes(of: oursAt..<region.ours.lowerBound))
                out.append(contentsOf: marker("<<<<<<<", oursLabel))
                appendEndingInNewline(oursLines.bytes(of: region.ours), to: &out)
                out.append(contentsOf: "=======\n".utf8)
                appendEndingInNewline(theirsLines.bytes(of: region.theirs), to: &out)
                out.append(contentsOf: marker(">>>>>>>", theirsLabel))
            }
            oursAt = region.ours.upperBound
        }
        out.append(contentsOf: oursLines.bytes(of: oursAt..<oursLines.count))
        let text = String(decoding: out, as: UTF8.self)
        return conflicts == 0 ? .clean(text) : .conflicts(marked: text, count: conflicts)
    }

    /// A region of the merge, in ours' and theirs' lines.
    private struct Region {
        enum Kind {
            /// Only ours changed it.
            case ours
            /// Only theirs changed it.
            case theirs
            /// Both changed it and wrote the same lines.
            case same
            case conflict
        }

        var kind: Kind
        var ours: Range<Int>
        var theirs: Range<Int>
    }

    /// The changed regions in order: a change of one side alone, or a change of either side with every change of
    /// the other side that overlaps or touches it, and so on (a change of one side never touches another of the
    /// same side). Conflicting regions come cut to the lines where their sides differ.
    private static func regions(
        _ toOurs: [LineEdit], _ toTheirs: [LineEdit], _ oursLines: TextLines, _ theirsLines: TextLines,
        _ workLimit: Int
    ) -> [Region] {
        var regions: [Region] = []
        // Each side's lines minus the base's before the next region: where a base line is on that side.
        var oursShift = 0
        var theirsShift = 0
        var i = 0
        var j = 0
        while i < toOurs.count || j < toTheirs.count {
            let oursFirst = i
            let theirsFirst = j
            var end: Int
            let start: Int
            if j == toTheirs.count || (i < toOurs.count && toOurs[i].old.lowerBound <= toTheirs[j].old.lowerBound) {
                (start, end) = (toOurs[i].old.lowerBound, toOurs[i].old.upperBound)
                i += 1
            } else {
                (start, end) = (toTheirs[j].old.lowerBound, toTheirs[j].old.upperBound)
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
            let oursEdits = toOurs[oursFirst..<i]
            let theirsEdits = toTheirs[theirsFirst..<j]
            let ours = side(oursEdits, base: start..<end, shift: &oursShift)
            let theirs = side(theirsEdits, base: start..<end, shift: &theirsShift)
            if theirsEdits.isEmpty {
                regions.append(Region(kind: .ours, ours: ours, theirs: theirs))
            } else if oursEdits.isEmpty {
                regions.append(Region(kind: .theirs, ours: ours, theirs: theirs))
            } else if oursEdits.count == 1 && theirsEdits.count == 1 && oursEdits.first!.old == theirsEdits.first!.old
                && oursLines.bytes(of: ours).elementsEqual(theirsLines.bytes(of: theirs))
            {
                // The same change on both sides: git takes it as if neither had made it (no region, so it never
                // keeps two conflicts apart).
                continue
            } else if ours.isEmpty || theirs.isEmpty {
                regions.append(Region(kind: .conflict, ours: ours, theirs: theirs))
            } else {
                // Only the lines where the two sides differ conflict.
                let oursPart = TextLines(bytes: Array(oursLines.bytes(of: ours)))
                let theirsPart = TextLines(bytes: Array(theirsLines.bytes(of: theirs)))
                let differences = LineDiff(old: oursPart, new: theirsPart, workLimit: workLimit).edits
                if differences.isEmpty {
                    regions.append(Region(kind: .same, ours: ours, theirs: theirs))
                }
                for difference in differences {
                    regions.append(
                        Region(
                            kind: .conflict,
                            ours: (ours.lowerBound + difference.old.lowerBound)..<(ours.lowerBound + difference.old.upperBound),
                            theirs: (theirs.lowerBound + difference.new.lowerBound)..<(theirs.lowerBound + difference.new.upperBound)))
                }
            }
        }
        return regions
    }

    /// One side's lines for the base lines `base`, from that side's edits inside it (none: the base's lines,
    /// shifted by the side's earlier edits); moves `shift` past the region.
    private static func side(_ edits: ArraySlice<LineEdit>, base: Range<Int>, shift: inout Int) -> Range<Int> {
        guard let first = edits.first, let last = edits.last else {
            return (base.lowerBound + shift)..<(base.upperBound + shift)
        }
        let start = first.new.lowerBound - (first.old.lowerBound - base.lowerBound)
        let end = last.new.upperBound + (base.upperBound - last.old.upperBound)
        shift = end - base.upperBound
        return start..<end
    }

    /// Joins two conflicts with at most three lines of ours between them, or only lines without an ASCII letter
    /// or digit: one conflict reads more easily than two so close (git's `xdl_simplify_non_conflicts`).
    private static func joinCloseConflicts(_ regions: inout [Region], _ oursLines: TextLines) {
        var index = 0
        while index + 1 < regions.count {
            let (current, next) = (regions[index], regions[index + 1])
            let between = current.ours.upperBound..<next.ours.lowerBound
            if current.kind == .conflict && next.kind == .conflict
                && (between.count <= 3 || !oursLines.bytes(of: between).contains(where: isAlphanumeric))
            {
                regions[index].ours = current.ours.lowerBound..<next.ours.upperBound
                regions[index].theirs = current.theirs.lowerBound..<next.theirs.upperBound
                regions.remove(at: index + 1)
            } else {
                index += 1
            }
        }
    }

    /// C's `isalnum` in the C locale, as git tests it byte by byte.
    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func marker(_ mark: String, _ label: String) -> String.UTF8View {
        (label.isEmpty ? "\(mark)\n" : "\(mark) \(label)\n").utf8
    }

    private static func appendEndingInNewline(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        out.append(contentsOf: bytes)
        if let last = bytes.last, last != UInt8(ascii: "\n") { out.append(UInt8(ascii: "\n")) }
    }
}
