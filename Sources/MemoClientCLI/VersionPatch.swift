import MemoDiff
import MemoModel

/// `memo-client log --patch`: each version's difference from the version before it, as `diff -u` (and `git log
/// -p`) print it, labelled with the two revisions.
enum VersionPatch {
    /// The patches of the first `shown` of `versions` (newest first): version i against version i + 1, the oldest
    /// kept against nothing (`--- /dev/null`). A version whose content is the same as the one before (a restore of
    /// the current text) has the empty patch.
    static func patches(_ versions: [MemoVersion], shown: Int) -> [String] {
        (0..<min(shown, versions.count)).map { index in
            let version = versions[index]
            let before = index + 1 < versions.count ? versions[index + 1] : nil
            return LineDiff.unifiedDiff(
                old: before?.content ?? "", new: version.content,
                oldLabel: before.map { "r\($0.revision)" } ?? "/dev/null", newLabel: "r\(version.revision)")
        }
    }
}
