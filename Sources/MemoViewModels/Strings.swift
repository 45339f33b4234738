import Foundation

/// One key's hint on the status bar ("n new") and how much it is needed there: 0 is always shown (the scene's main
/// keys and the way to the help), 1 and 2 only as room allows.
public struct KeyHint: Sendable, Hashable {
    public var text: String
    public var priority: Int

    public init(_ text: String, _ priority: Int) {
        self.text = text
        self.priority = priority
    }
}

/// Every word the front end shows, one table per language (English and Korean), picked from the locale.
///
/// Tables are values filled in one place each (`english`, `korean`), so that a string missing from one language
/// is a compile error rather than an English word on a Korean screen.
public struct Strings: Sendable, Hashable {
    // Scene titles.
    public var listTitle: String
    public var detailTitle: String
    public var editTitle: String
    public var newTitle: String

    // Key hints on the status bar, in the order shown; the bar drops the least needed when it is short.
    public var listHints: [KeyHint]
    public var listHintsReadOnly: [KeyHint]
    public var detailHints: [KeyHint]
    public var detailHintsReadOnly: [KeyHint]
    public var composeHints: [KeyHint]

    // The list.
    public var noMemosYet: String
    public var notConnected: String
    public var nothingMatches: String
    public var filterShown: @Sendable (String) -> String
    public var deleteNamed: @Sendable (String) -> String
    public var pendingTag: String
    public var helpLines: [String]
    public var helpLinesReadOnly: [String]

    // The detail.
    public var deleteThis: String
    public var saveTo: String
    public var lineOf: @Sendable (Int, Int) -> String
    /// Revision and update date: "revision 7 · updated <date>".
    public var revisionUpdated: @Sendable (UInt64, String) -> String
    /// A memo made here and not yet confirmed has no revision.
    public var notYetConfirmed: String
    public var deletedTag: String
    public var copied: String
    public var savedTo: @Sendable (String) -> String
    /// The path and the system's reason: "cannot write /x/y: Permission denied".
    public var couldNotSave: @Sendable (String, String) -> String
    public var overwriteFile: @Sendable (String) -> String
    public var detailHelpLines: [String]
    public var detailHelpLinesReadOnly: [String]

    // Compose.
    public var modifiedTag: String
    public var conflictChanged: @Sendable (String, UInt64) -> String
    public var conflictDeleted: String
    public var conflictChoices: String
    public var conflictDeletedChoices: String
    /// The labels of a merge's conflict marks (`m` at the conflict): ours after `<<<<<<<`; theirs after `>>>>>>>`,
    /// from their revision and author.
    public var mergeOursLabel: String
    public var mergeTheirsLabel: @Sendable (UInt64, String) -> String
    /// After `m`: every change merged, or this many regions marked to edit by hand.
    public var mergedClean: String
    public var mergedConflicts: @Sendable (Int) -> String
    public var discardChanges: String
    public var emptyMemo: String
    public var saved: String
    public var notSaved: @Sendable (String) -> String
    public var changedMeanwhile: String
    public var deletedMeanwhile: String
    public var composeHelpLines: [String]
    /// The editor command and why it did not give text back: not found, or its exit status or signal.
    public var editorNotFound: @Sendable (String) -> String
    public var editorNotExecutable: @Sendable (String) -> String
    public var editorExited: @Sendable (String, Int32) -> String
    public var editorKilled: @Sendable (String, Int32) -> String
    /// A save is on its way (keys keep working).
    public var saving: String
    /// A save had no answer within this many seconds; the text is kept.
    public var saveTimedOut: @Sendable (Int) -> String
    /// The choice offered after a save timed out.
    public var saveTimeoutChoices: String
    /// Saved by the store to send when the server answers (offline, or no answer yet).
    public var savedPending: String
    /// Saved, and text typed after Ctrl-S is still to save.
    public var savedTypedSince: String

    // Messages.
    public var deleted: String
    public var deletedElsewhere: String
    public var notDeletedConflict: String
    public var alreadyDeleted: String
    public var readOnly: String
    public var readOnlyRefusal: String
    public var refused: @Sendable (String, String) -> String

    // The status bar: one vocabulary, a state and (when it is known) why, "offline (connection refused)".
    public var live: String
    public var connecting: @Sendable (String?) -> String
    /// The attempt and the last reason: "reconnecting (connection refused, try 3)".
    public var reconnecting: @Sendable (Int, String?) -> String
    public var serverNotAnswering: String
    /// Connected, but a write has had no answer for a while and no keepalive checks the connection: "unconfirmed
    /// (server not answering)".
    public var unconfirmed: @Sendable (String?) -> String
    public var offline: @Sendable (String?) -> String
    public var pending: @Sendable (Int) -> String
    public var moreKey: String
    /// The same in the editor, where `?` is text.
    public var moreKeyInEditor: String
    public var serverNotTrusted: String
    public var certificateRefused: String
    public var certificateRevoked: String
    public var tlsFailed: @Sendable (String) -> String
    /// The offline queue could not be written to disk: the writes are kept in memory only.
    public var writesNotOnDisk: String

    // The not-saved scene (`!` on the list).
    public var notSavedTitle: String
    public var notSavedHints: [KeyHint]
    public var notSavedEmpty: String
    /// One entry's kind and reason, shown under its text.
    public var notSavedReason: @Sendable (NotSavedEntry.Kind, String) -> String
    public var notSavedDeletedElsewhere: String
    public var notSavedConfirmDiscard: String
    public var notSavedRetried: String
    public var notSavedSavedAsNew: String
    public var notSavedDiscarded: String

    /// Korean for a locale whose language is Korean, English otherwise.
    public static func forLocale(_ locale: Locale) -> Strings {
        let language = locale.language.languageCode?.identifier ?? locale.identifier
        return language.hasPrefix("ko") ? .korean : .english
    }

    public static func == (lhs: Strings, rhs: Strings) -> Bool { lhs.listTitle == rhs.listTitle }
    public func hash(into hasher: inout Hasher) { hasher.combine(listTitle) }
}
