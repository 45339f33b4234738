import MemoDiff
import MemoTestSupport
import Testing

/// Applies a diff's edits to its old text: must give the new text.
private func apply(_ diff: LineDiff) -> [UInt8] {
    var out: [UInt8] = []
    var oldAt = 0
    for edit in diff.edits {
        out.append(contentsOf: diff.old.bytes(of: oldAt..<edit.old.lowerBound))
        out.append(contentsOf: diff.new.bytes(of: edit.new))
        oldAt = edit.old.upperBound
    }
    out.append(contentsOf: diff.old.bytes(of: oldAt..<diff.old.count))
    return out
}

/// The number of `-` and `+` lines of a unified diff's hunks.
private func changedLines(_ unified: String) -> Int {
    unified.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2).filter {
        $0.hasPrefix("-") || $0.hasPrefix("+")
    }.count
}

@Suite("LineDiff: Myers' line diff and diff -u text")
struct LineDiffTests {
    @Test func theUnifiedTextIsByteForByteDiffUsOnTextsOfDistinctLines() throws {
        let files = try ToolFiles()
        for seed in UInt64(1)...150 {
            var texts = GeneratedTexts(seed: seed, lines: .distinct)
            let baseLines = texts.base(maxLines: 40)
            let old = texts.text(baseLines)
            let new = texts.text(texts.edit(baseLines, maxEdits: 5))
            let ours = LineDiff.unifiedDiff(old: old, new: new, oldLabel: "old", newLabel: "new")
            let (status, theirs) = try files.systemDiff(old, new)
            #expect(Array(ours.utf8) == Array(theirs.utf8), "seed \(seed):\n\(ours)\n---- diff -u:\n\(theirs)")
            #expect((status == 0) == ours.isEmpty, "seed \(seed)")
        }
    }

    @Test func onRepeatedLinesTheDiffIsAsShortAsDiffUsAndRebuildsTheNewText() throws {
        let files = try ToolFiles()
        var identical = 0
        for seed in UInt64(1)...150 {
            var texts = GeneratedTexts(seed: seed, lines: .repeated)
            let baseLines = texts.base(maxLines: 30)
            let old = texts.text(baseLines)
            let new = texts.text(texts.edit(baseLines, maxEdits: 4))
            let diff = LineDiff(old: old, new: new)
            let ours = diff.unified(oldLabel: "old", newLabel: "new")
            let (_, theirs) = try files.systemDiff(old, new)
            #expect(apply(diff) == Array(new.utf8), "seed \(seed)")
            #expect(diff.isComplete)
            #expect(changedLines(ours) == changedLines(theirs), "seed \(seed):\n\(ours)\n---- diff -u:\n\(theirs)")
            #expect(diff.changedLineCount == changedLines(theirs), "seed \(seed)")
            if Array(ours.utf8) == Array(theirs.utf8) { identical += 1 }
        }
        // Among shortest scripts the alignment of repeated lines is a choice; the sliding makes it diff's nearly
        // always (a different but equally short alignment is still a correct diff).
        #expect(identical >= 140, "\(identical) of 150 byte-identical to diff -u")
    }

    @Test func emptyTextsAndMissingFinalNewlinesPrintAsDiffPrintsThem() throws {
        let files = try ToolFiles()
        let cases: [(String, String)] = [
            ("", "a\n"), ("a\n", ""), ("", "a"), ("a", ""), ("a", "a\n"), ("a\n", "a"), ("a\nb", "a\nc"),
            ("a\nb", "a\nb\nc"), ("x\na\nb\nc\nd\ne\nf\ng\nh", "a\nb\nc\nd\ne\nf\ng\nh"), ("a\nb\n", "a\nb"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nX\n4\n5\n6\n7\n8\n9\nY\n11\n12\n"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n"),
        ]
        for (old, new) in cases {
            let ours = LineDiff.unifiedDiff(old: old, new: new, oldLabel: "old", newLabel: "new")
            let (_, theirs) = try files.systemDiff(old, new)
            #expect(Array(ours.utf8) == Array(theirs.utf8), "\(old.debugDescription) → \(new.debugDescription)")
        }
        #expect(LineDiff.unifiedDiff(old: "", new: "", oldLabel: "a", newLabel: "b") == "")
        #expect(
            LineDiff.unifiedDiff(old: "", new: "가\n", oldLabel: "a", newLabel: "b") == "--- a\n+++ b\n@@ -0,0 +1 @@\n+가\n")
    }

    @Test func hangulInItsTwoNormalFormsIsTwoDifferentLines() throws {
        let nfc = "메모\n\u{AC00}\n끝\n"
        let nfd = "메모\n\u{1100}\u{1161}\n끝\n"
        #expect(nfc == nfd)  // Swift's == is canonical equivalence; the diff must not be
        let diff = LineDiff(old: nfc, new: nfd)
        #expect(diff.edits == [LineEdit(old: 1..<2, new: 1..<2)])
        let (_, system) = try ToolFiles().systemDiff(nfc, nfd)
        let ours = diff.unified(oldLabel: "old", newLabel: "new")
        #expect(Array(ours.utf8) == Array(system.utf8))
        #expect(Array(ours.utf8).contains(0xE1))  // the NFD line's bytes, not re-normalised
    }

    @Test func pastTheWorkLimitTheDifferingRegionIsReplacedWholeAndStillRebuildsTheNewText() {
        // Ten lines repeated, in another order: every line has matches, so the search has real work to do.
        let old = (0..<200).map { "x \($0 % 10)\n" }.joined()
        let new = (0..<200).map { "x \(($0 * 3) % 10)\n" }.joined()
        let bounded = LineDiff(old: old, new: new, workLimit: 100)
        #expect(!bounded.isComplete)
        // Line 0 is the same in both and the last is not, so the region is lines 1..<200, replaced as one edit.
        #expect(bounded.edits == [LineEdit(old: 1..<200, new: 1..<200)])
        #expect(apply(bounded) == Array(new.utf8))
        let full = LineDiff(old: old, new: new)
        #expect(full.isComplete)
        #expect(full.edits.count > 1)
        #expect(full.changedLineCount < 398)
        #expect(apply(full) == Array(new.utf8))
    }

    @Test func aLargeTextWithFewChangesDiffsExactlyWithinTheDefaultLimit() {
        var lines = (0..<60_000).map { "row \($0)\n" }
        let old = lines.joined()
        lines[10] = "ten\n"
        lines.insert("new\n", at: 30_000)
        lines.remove(at: 59_000)
        let new = lines.joined()
        let diff = LineDiff(old: old, new: new)
        #expect(diff.isComplete)
        #expect(diff.edits.count == 3)
        #expect(apply(diff) == Array(new.utf8))
    }

    @Test func contextJoinsHunksCloserThanTwiceItAndZeroContextShowsOnlyChanges() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
        let new = "1\nX\n3\n4\n5\n6\n7\nY\n9\n"
        #expect(
            LineDiff.unifiedDiff(old: old, new: new, oldLabel: "a", newLabel: "b", context: 0)
                == "--- a\n+++ b\n@@ -2 +2 @@\n-2\n+X\n@@ -8 +8 @@\n-8\n+Y\n")
        #expect(
            LineDiff.unifiedDiff(old: old, new: new, oldLabel: "a", newLabel: "b", context: 3)
                == "--- a\n+++ b\n@@ -1,9 +1,9 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n 9\n")
        #expect(
            LineDiff.unifiedDiff(old: "a\nb\n", new: "a\nx\nb\n", oldLabel: "a", newLabel: "b", context: 0)
                == "--- a\n+++ b\n@@ -1,0 +2 @@\n+x\n")
    }
}
