import Foundation
import MemoDiff

/// One line of a version's difference from the one before, as the history scene marks it.
public struct DiffLine: Sendable, Hashable {
    public enum Mark: Sendable, Hashable {
        /// In both versions.
        case same
        /// Only in the newer one (`+`).
        case added
        /// Only in the older one (`-`).
        case removed
    }

    public var mark: Mark
    public var text: String

    public init(_ mark: Mark, _ text: String) {
        self.mark = mark
        self.text = text
    }

    /// The lines of `new` against `old`, in order, each marked: MemoDiff's line difference (lines compared as
    /// UTF-8 bytes), every line shown, not only those near a change.
    /// A last line without its newline is taken as the same line with it: the scene shows lines, not terminators
    /// (`memo-client log --patch` prints the exact difference, `\ No newline at end of file` included).
    static func lines(from old: String, to new: String) -> [DiffLine] {
        func terminated(_ text: String) -> String { text.isEmpty || text.hasSuffix("\n") ? text : text + "\n" }
        let diff = LineDiff(old: terminated(old), new: terminated(new))
        func text(_ lines: TextLines, _ index: Int) -> String {
            let bytes = lines[index]
            return String(decoding: lines.hasNewline(index) ? bytes.dropLast() : bytes, as: UTF8.self)
        }
        var result: [DiffLine] = []
        var next = 0
        for edit in diff.edits {
            result += (next..<edit.old.lowerBound).map { DiffLine(.same, text(diff.old, $0)) }
            result += edit.old.map { DiffLine(.removed, text(diff.old, $0)) }
            result += edit.new.map { DiffLine(.added, text(diff.new, $0)) }
            next = edit.old.upperBound
        }
        result += (next..<diff.old.count).map { DiffLine(.same, text(diff.old, $0)) }
        return result
    }
}
