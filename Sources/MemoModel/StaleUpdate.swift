import MemoDiff

/// The merge of an update made against an older revision of a memo (`WriteOp.update` with `merge`).
///
/// The server decides, not the client: it holds the base (the memo's kept version at the update's expected
/// revision), so one round trip settles the write; and every client and script that sets the flag gets the same
/// merge, by the same rules, whatever program it is.
public enum StaleUpdate {
    /// The content a stale update gets when its edit and the edits made since merge line by line: `base` is the
    /// version the writer started from (its expected revision), `current` the memo's content now (theirs),
    /// `update` the update's content (ours). Nil when the edits overlap or touch (`LineMerge`'s rules, git's), or
    /// when the merged text would be over `MemoLimits.maxContentBytes`: the update is then the conflict it was.
    public static func merged(base: String, current: String, update: String) -> String? {
        guard case .clean(let text) = LineMerge.merge(base: base, ours: update, theirs: current) else { return nil }
        guard text.utf8.count <= MemoLimits.maxContentBytes else { return nil }
        return text
    }
}
