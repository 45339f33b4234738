extension Strings {
    /// The Korean table (`--locale ko_KR`, or a Korean LC_ALL / LC_MESSAGES / LANG).
    public static let korean = Strings(
        listTitle: "메모 목록",
        detailTitle: "메모 보기",
        editTitle: "메모 편집",
        newTitle: "새 메모",
        listHints: [
            KeyHint("j/k 이동", 2), KeyHint("Enter 열기", 1), KeyHint("n 새 메모", 0), KeyHint("d 삭제", 1),
            KeyHint("/ 찾기", 1), KeyHint("? 도움말", 0), KeyHint("q 종료", 0),
        ],
        listHintsReadOnly: [
            KeyHint("j/k 이동", 2), KeyHint("Enter 열기", 0), KeyHint("/ 찾기", 1), KeyHint("? 도움말", 0),
            KeyHint("q 종료", 0),
        ],
        detailHints: [
            KeyHint("e 편집", 0), KeyHint("d 삭제", 1), KeyHint("s 복사", 1), KeyHint("S 파일로 저장", 2),
            KeyHint("? 도움말", 0), KeyHint("Esc 뒤로", 0),
        ],
        detailHintsReadOnly: [
            KeyHint("s 복사", 1), KeyHint("S 파일로 저장", 1), KeyHint("? 도움말", 0), KeyHint("Esc 뒤로", 0),
        ],
        composeHints: [
            KeyHint("Ctrl-S 저장", 0), KeyHint("Esc 취소", 0), KeyHint("Ctrl-E $EDITOR", 1), KeyHint("Ctrl-G 도움말", 0),
        ],
        noMemosYet: "메모가 아직 없습니다: n으로 새 메모",
        notConnected: "연결되지 않음",
        nothingMatches: "찾는 메모가 없습니다",
        filterShown: { "찾기: \($0)  (Esc 지우기)" },
        deleteNamed: { "“\($0)” 삭제할까요? y/N" },
        pendingTag: "대기 중",
        helpLines: [
            "j/k ↑/↓   이동", "g/G       처음/끝", "PgUp/PgDn 한 화면 위/아래", "Enter     열기", "n         새 메모",
            "d         삭제", "/         찾기 (Esc 지우기)", "?         도움말", "!         저장되지 않은 쓰기",
            "q Ctrl-C  종료",
        ],
        helpLinesReadOnly: [
            "j/k ↑/↓   이동", "g/G       처음/끝", "PgUp/PgDn 한 화면 위/아래", "Enter     열기",
            "n d       (읽기 전용: 쓰기 불가)", "/         찾기 (Esc 지우기)", "?         도움말",
            "!         저장되지 않은 쓰기", "q Ctrl-C  종료",
        ],
        deleteThis: "이 메모를 삭제할까요? y/N",
        saveTo: "저장할 곳: ",
        lineOf: { "\($0)/\($1) 줄  j/k 스크롤" },
        revisionUpdated: { "리비전 \($0) · 수정 \($1)" },
        notYetConfirmed: "서버 확인 대기 중",
        deletedTag: "삭제됨",
        copied: "클립보드에 복사했습니다",
        savedTo: { "\($0)에 저장했습니다" },
        couldNotSave: { "\($0)에 쓰지 못했습니다: \($1)" },
        overwriteFile: { "\($0) 파일이 있습니다: 덮어쓸까요? y/N" },
        detailHelpLines: [
            "j/k ↑/↓   스크롤", "PgDn Spc  한 화면 아래", "PgUp      한 화면 위", "e Enter   편집", "d Del     삭제",
            "s         클립보드에 복사", "S         파일로 저장 (0600)", "Esc q ←   목록으로", "?         도움말",
            "Ctrl-C    종료",
        ],
        detailHelpLinesReadOnly: [
            "j/k ↑/↓   스크롤", "PgDn Spc  한 화면 아래", "PgUp      한 화면 위", "e d       (읽기 전용: 쓰기 불가)",
            "s         클립보드에 복사", "S         파일로 저장 (0600)", "Esc q ←   목록으로", "?         도움말",
            "Ctrl-C    종료",
        ],
        modifiedTag: "수정됨",
        conflictChanged: { "다른 곳에서 바뀜, 지금 리비전 \($1): “\($0)”" },
        conflictDeleted: "다른 곳에서 삭제됨",
        conflictChoices: "o 덮어쓰기 · k 그쪽 유지 · Esc 계속 편집",
        conflictDeletedChoices: "o 새 메모로 저장 · k 그쪽 유지 · Esc 계속 편집",
        discardChanges: "고친 내용을 버릴까요? y/N",
        emptyMemo: "메모가 비어 있어 저장하지 않았습니다",
        saved: "저장했습니다",
        notSaved: { "저장하지 못했습니다: \($0)" },
        changedMeanwhile: "그사이 다른 사람이 고쳤습니다",
        deletedMeanwhile: "그사이 다른 사람이 삭제했습니다",
        composeHelpLines: [
            "Ctrl-S    저장", "Esc       취소 (고쳤으면 물어봄)", "Ctrl-E    $VISUAL/$EDITOR로 편집",
            "↑/↓       화면 한 줄 위/아래", "←/→       한 글자", "Home/End  줄 처음/끝",
            "Ctrl-G    도움말 (여기서 ?는 글자)", "Ctrl-C    종료",
        ],
        editorNotFound: { "편집기 \($0): 찾을 수 없음" },
        editorNotExecutable: { "편집기 \($0): 실행할 수 없음" },
        editorExited: { "편집기 \($0)이(가) 상태 \($1)로 끝났습니다; 글은 그대로입니다" },
        editorKilled: { "편집기 \($0)이(가) 시그널 \($1)로 끝났습니다; 글은 그대로입니다" },
        deleted: "삭제했습니다",
        deletedElsewhere: "열어 둔 메모가 다른 곳에서 삭제되었습니다",
        notDeletedConflict: "그사이 다른 사람이 고쳐서 삭제하지 않았습니다",
        alreadyDeleted: "이미 삭제되었습니다",
        readOnly: "읽기 전용",
        readOnlyRefusal: "읽기 전용: 이 인증서로는 쓸 수 없습니다",
        refused: { "서버가 “\($0)”을(를) 거부했습니다: \($1)" },
        live: "연결됨",
        connecting: { reason in reason.map { "연결 중 (\($0))" } ?? "연결 중" },
        reconnecting: { attempt, reason in "다시 연결 중 (" + (reason.map { $0 + ", " } ?? "") + "\(attempt)번째)" },
        serverNotAnswering: "서버 응답 없음",
        offline: { reason in reason.map { "오프라인 (\($0))" } ?? "오프라인" },
        pending: { "\($0)개 대기 중" },
        moreKey: "? 이유",
        moreKeyInEditor: "Ctrl-G 이유",
        serverNotTrusted: "TLS: 서버 인증서가 내 CA로 서명되지 않았습니다",
        certificateRefused: "서버가 인증서를 거부했습니다",
        certificateRevoked: "인증서가 폐기되었습니다",
        tlsFailed: { "TLS: \($0)" },
        writesNotOnDisk: "대기 중인 쓰기를 디스크에 저장하지 못했습니다",
        notSavedTitle: "저장되지 않음: 서버가 거부한 쓰기",
        notSavedHints: [
            KeyHint("j/k 이동", 2), KeyHint("r 다시 보내기", 0), KeyHint("n 새 메모로 저장", 0), KeyHint("s 복사", 1),
            KeyHint("d 버리기", 1), KeyHint("Esc 뒤로", 0),
        ],
        notSavedEmpty: "여기 남은 것이 없습니다: 모든 쓰기가 서버에 닿았습니다",
        notSavedReason: { kind, reason in
            let what: String
            switch kind {
            case .create: what = "새 메모"
            case .update: what = "고침"
            case .delete: what = "삭제"
            }
            return "\(what) 거부됨: \(reason)"
        },
        notSavedDeletedElsewhere: "다른 곳에서 삭제된 메모입니다: n으로 새 메모로 저장합니다",
        notSavedConfirmDiscard: "이 글을 아주 버릴까요? y/N",
        notSavedRetried: "다시 보냈습니다",
        notSavedSavedAsNew: "새 메모로 저장했습니다",
        notSavedDiscarded: "버렸습니다")
}
