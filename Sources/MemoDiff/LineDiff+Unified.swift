extension LineDiff {
    /// The difference of two texts as `diff -u` prints it (and `git diff`, whose hunks have the same form).
    ///
    /// `--- oldLabel` and `+++ newLabel`, then hunks `@@ -a,b +c,d @@` (a count of 1 is left out, `-3`; an empty
    /// range names the line before it, `-0,0` for an empty old text), each line marked ` `, `-` or `+`; a line
    /// without its newline (a text's last) is followed by `\ No newline at end of file`. Hunks closer than
    /// 2 × `context` unchanged lines join, as in diff. Texts with the same bytes give the empty string.
    /// - Parameters:
    ///   - context: unchanged lines shown around each change (diff's and git's default is 3).
    public static func unifiedDiff(
        old: String, new: String, oldLabel: String, newLabel: String, context: Int = 3
    ) -> String {
        LineDiff(old: old, new: new).unified(oldLabel: oldLabel, newLabel: newLabel, context: context)
    }

    /// This difference as `diff -u` prints it (see `unifiedDiff(old:new:oldLabel:newLabel:context:)`).
    public func unified(oldLabel: String, newLabel: String, context: Int = 3) -> String {
        if edits.isEmpty { return "" }
        let context = max(0, context)
        var out: [UInt8] = []
        out.append(contentsOf: "--- \(oldLabel)\n+++ \(newLabel)\n".utf8)
        var first = 0
        while first < edits.count {
            // The edits of one hunk: the next joins while the unchanged lines between are at most 2 × context.
            var last = first
            while last + 1 < edits.count && edits[last + 1].old.lowerBound - edits[last].old.upperBound <= 2 * context {
                last += 1
            }
            let oldStart = max(0, edits[first].old.lowerBound - context)
            let oldEnd = min(old.count, edits[last].old.upperBound + context)
            let newStart = edits[first].new.lowerBound - (edits[first].old.lowerBound - oldStart)
            let newEnd = edits[last].new.upperBound + (oldEnd - edits[last].old.upperBound)
            out.append(contentsOf: "@@ -\(Self.range(oldStart, oldEnd)) +\(Self.range(newStart, newEnd)) @@\n".utf8)
            var oldLine = oldStart
            for edit in edits[first...last] {
                while oldLine < edit.old.lowerBound {
                    append(mark: " ", old, oldLine, to: &out)
                    oldLine += 1
                }
                for line in edit.old { append(mark: "-", old, line, to: &out) }
                for line in edit.new { append(mark: "+", new, line, to: &out) }
                oldLine = edit.old.upperBound
            }
            while oldLine < oldEnd {
                append(mark: " ", old, oldLine, to: &out)
                oldLine += 1
            }
            first = last + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `a,b` (first line counted from 1, and the count), `a` alone for one line, and the line before for none.
    private static func range(_ start: Int, _ end: Int) -> String {
        switch end - start {
        case 0: "\(start),0"
        case 1: "\(start + 1)"
        default: "\(start + 1),\(end - start)"
        }
    }

    private func append(mark: Character, _ lines: TextLines, _ index: Int, to out: inout [UInt8]) {
        out.append(contentsOf: String(mark).utf8)
        out.append(contentsOf: lines[index])
        if !lines.hasNewline(index) { out.append(contentsOf: "\n\\ No newline at end of file\n".utf8) }
    }
}
