import Foundation

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

    // Key hints on the status bar.
    public var listHints: String
    public var listHintsReadOnly: String
    public var detailHints: String
    public var detailHintsReadOnly: String
    public var composeHints: String

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
    public var couldNotSave: @Sendable (String, String) -> String

    // Compose.
    public var modifiedTag: String
    public var conflictChanged: @Sendable (String, UInt64) -> String
    public var conflictDeleted: String
    public var conflictChoices: String
    public var conflictDeletedChoices: String
    public var discardChanges: String
    public var emptyMemo: String
    public var saved: String
    public var notSaved: @Sendable (String) -> String
    public var changedMeanwhile: String
    public var deletedMeanwhile: String
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

    // The status bar.
    public var live: String
    public var connecting: String
    public var reconnecting: @Sendable (Int) -> String
    public var notAnswering: String
    public var offline: String
    public var pending: @Sendable (Int) -> String
    public var moreKey: String
    public var serverNotTrusted: String
    public var certificateRefused: String
    public var tlsFailed: @Sendable (String) -> String

    /// Korean for a locale whose language is Korean, English otherwise.
    public static func forLocale(_ locale: Locale) -> Strings {
        let language = locale.language.languageCode?.identifier ?? locale.identifier
        return language.hasPrefix("ko") ? .korean : .english
    }

    public static func == (lhs: Strings, rhs: Strings) -> Bool { lhs.listTitle == rhs.listTitle }
    public func hash(into hasher: inout Hasher) { hasher.combine(listTitle) }
}
