extension Strings {
    /// The English table: every locale but Korean.
    public static let english = Strings(
        listTitle: "Memos",
        detailTitle: "Memo",
        editTitle: "Edit memo",
        newTitle: "New memo",
        listHints: [
            KeyHint("j/k move", 2), KeyHint("Enter open", 1), KeyHint("n new", 0), KeyHint("d delete", 1),
            KeyHint("/ filter", 1), KeyHint("? help", 0), KeyHint("q quit", 0),
        ],
        listHintsReadOnly: [
            KeyHint("j/k move", 2), KeyHint("Enter open", 0), KeyHint("/ filter", 1), KeyHint("? help", 0),
            KeyHint("q quit", 0),
        ],
        detailHints: [
            KeyHint("e edit", 0), KeyHint("d delete", 1), KeyHint("s copy", 1), KeyHint("S save to file", 2),
            KeyHint("? help", 0), KeyHint("Esc back", 0),
        ],
        detailHintsReadOnly: [
            KeyHint("s copy", 1), KeyHint("S save to file", 1), KeyHint("? help", 0), KeyHint("Esc back", 0),
        ],
        composeHints: [
            KeyHint("Ctrl-S save", 0), KeyHint("Esc cancel", 0), KeyHint("Ctrl-E $EDITOR", 1),
            KeyHint("Ctrl-G help", 0),
        ],
        noMemosYet: "no memos yet: n writes one",
        notConnected: "not connected",
        nothingMatches: "nothing matches the filter",
        filterShown: { "filter: \($0)  (Esc clears)" },
        deleteNamed: { "delete “\($0)”? y/N" },
        pendingTag: "pending",
        helpLines: [
            "j/k ↑/↓   move", "g/G       first/last", "PgUp/PgDn one screen up/down", "Enter     open",
            "n         new memo", "d         delete", "/         filter (Esc clears)", "?         this help",
            "!         not saved (writes the server refused)", "q Ctrl-C  quit",
        ],
        helpLinesReadOnly: [
            "j/k ↑/↓   move", "g/G       first/last", "PgUp/PgDn one screen up/down", "Enter     open",
            "n d       (read-only: no writes)", "/         filter (Esc clears)", "?         this help",
            "!         not saved (writes the server refused)", "q Ctrl-C  quit",
        ],
        deleteThis: "delete this memo? y/N",
        saveTo: "save to: ",
        lineOf: { "line \($0)/\($1)  j/k scroll" },
        revisionUpdated: { "revision \($0) · updated \($1)" },
        notYetConfirmed: "not yet confirmed by the server",
        deletedTag: "deleted",
        copied: "copied to the clipboard",
        savedTo: { "saved to \($0)" },
        couldNotSave: { "cannot write \($0): \($1)" },
        overwriteFile: { "\($0) exists: overwrite it? y/N" },
        detailHelpLines: [
            "j/k ↑/↓   scroll", "PgDn Spc  one screen down", "PgUp      one screen up", "e Enter   edit",
            "d Del     delete", "s         copy to the clipboard", "S         save to a file (0600)",
            "Esc q ←   back to the list", "?         this help", "Ctrl-C    quit",
        ],
        detailHelpLinesReadOnly: [
            "j/k ↑/↓   scroll", "PgDn Spc  one screen down", "PgUp      one screen up",
            "e d       (read-only: no writes)", "s         copy to the clipboard", "S         save to a file (0600)",
            "Esc q ←   back to the list", "?         this help", "Ctrl-C    quit",
        ],
        modifiedTag: "modified",
        conflictChanged: { "changed elsewhere, now revision \($1): “\($0)”" },
        conflictDeleted: "deleted elsewhere",
        conflictChoices: "o overwrite · k keep theirs · Esc keep editing",
        conflictDeletedChoices: "o save as new · k keep theirs · Esc keep editing",
        discardChanges: "discard your changes? y/N",
        emptyMemo: "the memo is empty; nothing to save",
        saved: "saved",
        notSaved: { "not saved: \($0)" },
        changedMeanwhile: "changed by someone else meanwhile",
        deletedMeanwhile: "deleted by someone else meanwhile",
        composeHelpLines: [
            "Ctrl-S    save", "Esc       cancel (asks if changed)", "Ctrl-E    edit in $VISUAL/$EDITOR",
            "↑/↓       one screen row up/down", "←/→       one character", "Home/End  start/end of the line",
            "Ctrl-G    this help (? is text here)", "Ctrl-C    quit",
        ],
        editorNotFound: { "editor \($0): not found" },
        editorNotExecutable: { "editor \($0): not executable" },
        editorExited: { "editor \($0) exited with status \($1); the text is unchanged" },
        editorKilled: { "editor \($0) was ended by signal \($1); the text is unchanged" },
        deleted: "deleted",
        deletedElsewhere: "the memo you had open was deleted elsewhere",
        notDeletedConflict: "changed by someone else meanwhile; not deleted",
        alreadyDeleted: "already deleted",
        readOnly: "read-only",
        readOnlyRefusal: "read-only: this certificate may not write",
        refused: { "the server refused “\($0)”: \($1)" },
        live: "live",
        connecting: { reason in reason.map { "connecting (\($0))" } ?? "connecting" },
        reconnecting: { attempt, reason in "reconnecting (" + (reason.map { $0 + ", " } ?? "") + "try \(attempt))" },
        serverNotAnswering: "server not answering",
        offline: { reason in reason.map { "offline (\($0))" } ?? "offline" },
        pending: { "\($0) pending" },
        moreKey: "? why",
        moreKeyInEditor: "Ctrl-G why",
        serverNotTrusted: "TLS: the server's certificate is not signed by your CA",
        certificateRefused: "certificate refused by the server",
        certificateRevoked: "certificate revoked",
        tlsFailed: { "TLS: \($0)" },
        writesNotOnDisk: "pending writes not saved to disk",
        notSavedTitle: "Not saved: writes the server refused",
        notSavedHints: [
            KeyHint("j/k move", 2), KeyHint("r retry", 0), KeyHint("n save as new", 0), KeyHint("s copy", 1),
            KeyHint("d discard", 1), KeyHint("Esc back", 0),
        ],
        notSavedEmpty: "nothing waits here: every write reached the server",
        notSavedReason: { kind, reason in
            let what: String
            switch kind {
            case .create: what = "new memo"
            case .update: what = "edit"
            case .delete: what = "delete"
            }
            return "\(what) refused: \(reason)"
        },
        notSavedDeletedElsewhere: "the memo was deleted elsewhere: n saves the text as a new memo",
        notSavedConfirmDiscard: "discard this text for good? y/N",
        notSavedRetried: "sent again",
        notSavedSavedAsNew: "saved as a new memo",
        notSavedDiscarded: "discarded")
}
