import MemoDiff
import MemoTestSupport
import Testing

@Suite("LineMerge: three-way line merge with git merge-file's rules")
struct LineMergeTests {
    /// Compares with `git merge-file` on generated edits: clean exactly when git's is, the same bytes, and the same
    /// number of conflicts.
    private func compareWithGit(lines: GeneratedTexts.Lines, seeds: ClosedRange<UInt64>) throws -> (Int, Int) {
        let files = try ToolFiles()
        var clean = 0
        var conflicting = 0
        for seed in seeds {
            var texts = GeneratedTexts(seed: seed, lines: lines)
            let baseLines = texts.base(maxLines: 30)
            let base = texts.text(baseLines)
            let ours = texts.text(texts.edit(baseLines, maxEdits: 3))
            let theirs = seed % 7 == 0 ? ours : texts.text(texts.edit(baseLines, maxEdits: 3))
            let result = LineMerge.merge(base: base, ours: ours, theirs: theirs)
            let git = try files.gitMerge(base: base, ours: ours, theirs: theirs)
            let context = "seed \(seed)\nbase: \(base.debugDescription)\nours: \(ours.debugDescription)\n"
                + "theirs: \(theirs.debugDescription)\nmemo: \(result)\ngit (\(git.conflicts)): \(git.out.debugDescription)"
            switch result {
            case .clean(let text):
                clean += 1
                #expect(git.conflicts == 0, "\(context)")
                #expect(Array(text.utf8) == Array(git.out.utf8), "\(context)")
            case .conflicts(let marked, let count):
                conflicting += 1
                #expect(Int(git.conflicts) == count, "\(context)")
                #expect(Array(marked.utf8) == Array(git.out.utf8), "\(context)")
            }
        }
        return (clean, conflicting)
    }

    @Test func theSameBytesAndConflictCountAsGitMergeFileOnTextsOfDistinctLines() throws {
        let (clean, conflicting) = try compareWithGit(lines: .distinct, seeds: 1...300)
        // The generator gives both outcomes often enough for the comparison to mean something.
        #expect(clean > 60 && conflicting > 60, "\(clean) clean, \(conflicting) conflicting")
    }

    @Test func theSameBytesAndConflictCountAsGitMergeFileOnTextsOfRepeatedLines() throws {
        let (clean, conflicting) = try compareWithGit(lines: .repeated, seeds: 1001...1200)
        #expect(clean > 30 && conflicting > 30, "\(clean) clean, \(conflicting) conflicting")
    }

    @Test func editsOfDifferentLinesMergeWithBothKept() {
        let base = "title\none\ntwo\nthree\nfour\n"
        let ours = "title\nONE\ntwo\nthree\nfour\n"
        let theirs = "title\none\ntwo\nthree\nFOUR\nfive\n"
        #expect(LineMerge.merge(base: base, ours: ours, theirs: theirs) == .clean("title\nONE\ntwo\nthree\nFOUR\nfive\n"))
    }

    @Test func theSameChangeOnBothSidesIsTakenOnce() {
        let base = "a\nb\nc\n"
        let both = "a\nB\nc\nd\n"
        #expect(LineMerge.merge(base: base, ours: both, theirs: both) == .clean(both))
        #expect(LineMerge.merge(base: base, ours: "a\nB\nc\n", theirs: "a\nB\nc\nd\n") == .clean("a\nB\nc\nd\n"))
    }

    @Test func overlappingDifferentChangesConflictWithGitsMarksAndTheLabels() {
        let base = "a\nb\nc\nd\n"
        let result = LineMerge.merge(
            base: base, ours: "a\nmine\nc\nd\n", theirs: "a\nyours\nc\nd\n", oursLabel: "my edit",
            theirsLabel: "server (revision 7)")
        #expect(
            result == .conflicts(
                marked: "a\n<<<<<<< my edit\nmine\n=======\nyours\n>>>>>>> server (revision 7)\nc\nd\n", count: 1))
    }

    @Test func editsOfAdjacentLinesConflictAsInGit() {
        let base = "a\nb\nc\nd\n"
        let result = LineMerge.merge(base: base, ours: "a\nB\nc\nd\n", theirs: "a\nb\nC\nd\n")
        #expect(result == .conflicts(marked: "a\n<<<<<<< ours\nB\nc\n=======\nb\nC\n>>>>>>> theirs\nd\n", count: 1))
        // With one unchanged line between them they merge.
        #expect(LineMerge.merge(base: base, ours: "A\nb\nc\nd\n", theirs: "a\nb\nC\nd\n") == .clean("A\nb\nC\nd\n"))
    }

    @Test func insertionsAtOnePlaceConflictUnlessTheSame() {
        let base = "a\nb\n"
        #expect(
            LineMerge.merge(base: base, ours: "a\nx\nb\n", theirs: "a\ny\nb\n")
                == .conflicts(marked: "a\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\nb\n", count: 1))
        #expect(LineMerge.merge(base: base, ours: "a\nx\nb\n", theirs: "a\nx\nb\n") == .clean("a\nx\nb\n"))
    }

    @Test func aConflictKeepsTheLinesBothSidesShareOutsideItsMarks() {
        let base = "a\nb\nc\n"
        let result = LineMerge.merge(base: base, ours: "a\nsame\nmine\nend\nc\n", theirs: "a\nsame\nyours\nend\nc\n")
        #expect(
            result == .conflicts(marked: "a\nsame\n<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\nend\nc\n", count: 1))
    }

    @Test func aLastLineWithoutNewlineGetsOneBeforeTheMark() {
        let result = LineMerge.merge(base: "a\nb", ours: "a\nmine", theirs: "a\nyours")
        #expect(result == .conflicts(marked: "a\n<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n", count: 1))
    }

    @Test func hangulInTheOtherNormalFormIsADifferentEdit() {
        let base = "메모\n원래\n끝\n"
        let nfc = "메모\n\u{AC00}\n끝\n"
        let nfd = "메모\n\u{1100}\u{1161}\n끝\n"
        let result = LineMerge.merge(base: base, ours: nfc, theirs: nfd)
        guard case .conflicts(let marked, 1) = result else {
            Issue.record("expected one conflict, got \(result)")
            return
        }
        #expect(Array(marked.utf8) == Array("메모\n<<<<<<< ours\n\u{AC00}\n=======\n\u{1100}\u{1161}\n>>>>>>> theirs\n끝\n".utf8))
        #expect(LineMerge.merge(base: base, ours: nfc, theirs: nfc) == .clean(nfc))
    }

    @Test func conflictsWithAtMostThreeLinesOrOnlyPunctuationBetweenJoinAsInGit() {
        let base = "1\n2\n3\n4\n5\n"
        #expect(
            LineMerge.merge(base: base, ours: "A\n2\n3\n4\nE\n", theirs: "a\n2\n3\n4\ne\n")
                == .conflicts(marked: "<<<<<<< ours\nA\n2\n3\n4\nE\n=======\na\n2\n3\n4\ne\n>>>>>>> theirs\n", count: 1))
        let braces = "x\n}\n}\n\n}\n}\ny\n"
        #expect(
            LineMerge.merge(base: braces, ours: "X\n}\n}\n\n}\n}\nY\n", theirs: "x1\n}\n}\n\n}\n}\ny1\n")
                == .conflicts(
                    marked: "<<<<<<< ours\nX\n}\n}\n\n}\n}\nY\n=======\nx1\n}\n}\n\n}\n}\ny1\n>>>>>>> theirs\n", count: 1))
    }

    @Test func twoSeparateConflictsAreCountedApart() {
        let base = "1\n2\n3\n4\n5\n6\n7\n"
        let result = LineMerge.merge(base: base, ours: "A\n2\n3\n4\n5\n6\nG\n", theirs: "a\n2\n3\n4\n5\n6\ng\n")
        guard case .conflicts(_, let count) = result else {
            Issue.record("expected conflicts, got \(result)")
            return
        }
        #expect(count == 2)
    }
}
