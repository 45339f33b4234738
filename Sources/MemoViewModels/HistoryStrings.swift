import Foundation
import MemoModel

/// The words of the history and trash scenes and of the detail's author line, one table per language like
/// `Strings` (a string missing from one language is a compile error). `Strings.history` picks the table of the
/// same language as the scene's strings.
public struct HistoryStrings: Sendable {
    // The detail's last line when the author is known: "revision 7 · edited by alice · <date>".
    public var revisionEditedBy: @Sendable (UInt64, String, String) -> String

    // The history scene.
    public var historyTitle: String
    public var historyHints: [KeyHint]
    public var historyHintsReadOnly: [KeyHint]
    public var paneHints: [KeyHint]
    public var kindName: @Sendable (VersionKind) -> String
    public var loading: String
    public var noVersions: String
    /// Shown under the last version loaded when the server keeps older ones.
    public var olderNotShown: String
    /// The content pane's title line: "revision 7 · alice · <date>".
    public var versionHeading: @Sendable (UInt64, String, String) -> String
    /// The difference pane's title: against the version before, or the first one kept.
    public var differenceHeading: @Sendable (UInt64, UInt64?) -> String
    public var noDifference: String
    public var historyGone: String
    public var historyNotLoaded: @Sendable (String) -> String
    public var alreadyCurrent: String
    public var restoreRevision: @Sendable (UInt64) -> String
    public var restoring: String
    public var restoredRevision: @Sendable (UInt64) -> String
    public var notRestoredConflict: String
    public var notRestored: @Sendable (String) -> String
    /// `h` or `T` with a store that keeps no versions (a local store).
    public var noHistoryHere: String

    // The trash scene.
    public var trashTitle: String
    public var trashHints: [KeyHint]
    public var trashHintsReadOnly: [KeyHint]
    public var trashEmpty: String
    /// "deleted by alice · <date>", under each deleted memo's first line.
    public var deletedBy: @Sendable (String, String) -> String
    public var bringBack: @Sendable (String) -> String
    public var broughtBack: String
    public var trashItemGone: String

    public static let english = HistoryStrings(
        revisionEditedBy: { "revision \($0) · edited by \($1) · \($2)" },
        historyTitle: "History",
        historyHints: [
            KeyHint("j/k move", 2), KeyHint("Enter show", 1), KeyHint("d diff", 1), KeyHint("r restore", 0),
            KeyHint("Esc back", 0),
        ],
        historyHintsReadOnly: [
            KeyHint("j/k move", 2), KeyHint("Enter show", 1), KeyHint("d diff", 1), KeyHint("Esc back", 0),
        ],
        paneHints: [KeyHint("j/k scroll", 1), KeyHint("Esc back", 0)],
        kindName: { kind in
            switch kind {
            case .create: return "created"
            case .update: return "edited"
            case .restore: return "restored"
            }
        },
        loading: "loading…",
        noVersions: "no versions kept",
        olderNotShown: "older versions are kept but not shown",
        versionHeading: { "revision \($0) · \($1) · \($2)" },
        differenceHeading: { revision, before in
            before.map { "revision \(revision) against \($0)" } ?? "revision \(revision), the first kept"
        },
        noDifference: "no difference",
        historyGone: "this memo's history is no longer kept",
        historyNotLoaded: { "history not loaded: \($0)" },
        alreadyCurrent: "this is the memo's current text",
        restoreRevision: { "restore revision \($0)? y/N" },
        restoring: "restoring…",
        restoredRevision: { "restored revision \($0)" },
        notRestoredConflict: "changed by someone else meanwhile; not restored",
        notRestored: { "not restored: \($0)" },
        noHistoryHere: "no history here: this store keeps no versions",
        trashTitle: "Trash",
        trashHints: [KeyHint("j/k move", 2), KeyHint("r bring back", 0), KeyHint("Esc back", 0)],
        trashHintsReadOnly: [KeyHint("j/k move", 2), KeyHint("Esc back", 0)],
        trashEmpty: "the trash is empty",
        deletedBy: { "deleted by \($0) · \($1)" },
        bringBack: { "bring back “\($0)”? y/N" },
        broughtBack: "brought back",
        trashItemGone: "that memo left the trash meanwhile")

    public static let korean = HistoryStrings(
        revisionEditedBy: { "리비전 \($0) · \($1) 수정 · \($2)" },
        historyTitle: "변경 이력",
        historyHints: [
            KeyHint("j/k 이동", 2), KeyHint("Enter 보기", 1), KeyHint("d 비교", 1), KeyHint("r 되돌리기", 0),
            KeyHint("Esc 뒤로", 0),
        ],
        historyHintsReadOnly: [
            KeyHint("j/k 이동", 2), KeyHint("Enter 보기", 1), KeyHint("d 비교", 1), KeyHint("Esc 뒤로", 0),
        ],
        paneHints: [KeyHint("j/k 스크롤", 1), KeyHint("Esc 뒤로", 0)],
        kindName: { kind in
            switch kind {
            case .create: return "작성"
            case .update: return "수정"
            case .restore: return "되돌림"
            }
        },
        loading: "불러오는 중…",
        noVersions: "보관된 버전이 없습니다",
        olderNotShown: "더 오래된 버전은 보이지 않습니다",
        versionHeading: { "리비전 \($0) · \($1) · \($2)" },
        differenceHeading: { revision, before in
            before.map { "리비전 \(revision) ↔ \($0)" } ?? "리비전 \(revision) (보관된 첫 버전)"
        },
        noDifference: "차이 없음",
        historyGone: "이 메모의 이력은 더 이상 보관되지 않습니다",
        historyNotLoaded: { "이력을 불러오지 못했습니다: \($0)" },
        alreadyCurrent: "지금의 내용과 같은 버전입니다",
        restoreRevision: { "리비전 \($0)으로 되돌릴까요? y/N" },
        restoring: "되돌리는 중…",
        restoredRevision: { "리비전 \($0)으로 되돌렸습니다" },
        notRestoredConflict: "그사이 다른 사람이 바꿨습니다; 되돌리지 않았습니다",
        notRestored: { "되돌리지 못했습니다: \($0)" },
        noHistoryHere: "이력이 없습니다: 이 저장소는 버전을 보관하지 않습니다",
        trashTitle: "휴지통",
        trashHints: [KeyHint("j/k 이동", 2), KeyHint("r 복원", 0), KeyHint("Esc 뒤로", 0)],
        trashHintsReadOnly: [KeyHint("j/k 이동", 2), KeyHint("Esc 뒤로", 0)],
        trashEmpty: "휴지통이 비었습니다",
        deletedBy: { "\($0) 삭제 · \($1)" },
        bringBack: { "“\($0)” 복원할까요? y/N" },
        broughtBack: "복원했습니다",
        trashItemGone: "그 메모는 그사이 휴지통에서 나갔습니다")
}

extension Strings {
    /// The history and trash words in this table's language.
    public var history: HistoryStrings { self == .korean ? .korean : .english }
}
