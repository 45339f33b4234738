import Foundation

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

    /// The lines of `new` against `old`, in order, each marked.
    static func lines(from old: String, to new: String) -> [DiffLine] {
        // TEMPORARY until MemoDiff lands: the whole text replaced.
        let before = old.isEmpty ? [] : old.split(separator: "\n", omittingEmptySubsequences: false)
        let after = new.isEmpty ? [] : new.split(separator: "\n", omittingEmptySubsequences: false)
        return before.map { DiffLine(.removed, String($0)) } + after.map { DiffLine(.added, String($0)) }
    }
}
