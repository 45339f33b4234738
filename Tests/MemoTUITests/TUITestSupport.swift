import Foundation
import MemoModel
import MemoStore
import MemoTUI
import MemoViewModels
import Synchronization

/// Memos with fixed ids and dates, so that screens and formatted dates are the same on every run.
enum TUIFixtures {
    /// 2026-11-30 03:26:13 UTC, in microseconds.
    static let baseMicros: Int64 = 1_796_009_173_000_000

    static func id(_ n: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))!
    }

    /// A memo inserted `n` minutes after the base date, at revision `n`.
    static func memo(_ n: Int, _ content: String) -> Memo {
        let micros = baseMicros + Int64(n) * 60_000_000
        return Memo(id: id(n), content: content, insertMicros: micros, updateMicros: micros, revision: UInt64(n))
    }

    /// A store holding memos 1...contents.count (the last one newest), and a clock that moves one minute a call.
    static func store(_ contents: [String]) -> MemoryStore {
        let memos = contents.enumerated().map { memo($0.offset + 1, $0.element) }
        let clock = TestClock(start: baseMicros + Int64(contents.count + 1) * 60_000_000)
        return MemoryStore(memos: memos, clock: { clock.next() })
    }

    static let korean = [
        "장보기 목록: 우유, 계란, 김치",
        "RxSwift 스터디 메모\nMVVM-C 패턴으로 메모 앱을 만든다. SceneCoordinator는 실제 화면의 씬을 추적해야 한다.",
        "회의 — 다음 주 화요일 오후 3시 👍",
    ]

    static let seoul = MemoDateFormat(locale: Locale(identifier: "ko_KR"), timeZone: TimeZone(identifier: "Asia/Seoul")!)
    static let utcKorean = MemoDateFormat(locale: Locale(identifier: "ko_KR"), timeZone: TimeZone(identifier: "UTC")!)
}

/// A clock for stores: every call is one minute later.
final class TestClock: Sendable {
    private let micros: Mutex<Int64>

    init(start: Int64) { micros = Mutex(start) }

    func next() -> Int64 {
        micros.withLock { value in
            defer { value += 60_000_000 }
            return value
        }
    }
}

extension SceneModel {
    /// The scene's child task (a save, a delete), if it started one.
    @FrontEnd var childTask: Task<Void, Never>? {
        switch self {
        case .list(let list): return list.deleteTask
        case .detail(let detail): return detail.deleteTask
        case .compose(let compose): return compose.saveTask
        case .notSaved: return nil
        case .history(let history): return history.task
        case .trash(let trash): return trash.task
        }
    }
}

/// Waits until the front end has nothing left to do: the store's deliveries applied (they hop onto the loop), the
/// scenes' saves and deletes finished, and what those delivered applied too.
@FrontEnd
func settle(_ coordinator: SceneCoordinator) async {
    await FrontEnd.drained()
    for model in coordinator.models { await model.childTask?.value }
    await FrontEnd.drained()
}
