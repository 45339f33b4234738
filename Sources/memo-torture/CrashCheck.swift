import Foundation
import MemoModel
import MemoWire

/// Checks a crash run after the fact: the writers' acknowledged writes and each watcher's stream against the
/// server's final list and its full change history.
struct CrashCheck {
    /// Every change from revision 1 to the head, as the restarted server reports it.
    let history: [Change]
    let finalMemos: [Memo]
    let head: UInt64
    /// The memo made before the watchers started; their streams begin after it.
    let seed: Memo

    var acknowledged = 0
    var lost = 0
    var duplicated = 0
    var cameBack = 0
    var inconsistent = 0
    var eventsChecked = 0
    var missed = 0
    var repeated = 0
    var mismatched = 0
    var problems: [String] = []

    init(history: [Change], finalMemos: [Memo], head: UInt64, seed: Memo) {
        self.history = history
        self.finalMemos = finalMemos
        self.head = head
        self.seed = seed
    }

    private func change(at revision: UInt64) -> Change? {
        guard revision >= 1, revision <= UInt64(history.count) else { return nil }
        let change = history[Int(revision - 1)]
        return change.revision == revision ? change : nil
    }

    private mutating func problem(_ text: String) {
        if problems.count < 20 { problems.append(text) }
    }

    /// The history is gap-free and replaying it gives the final list; no memo exists twice.
    mutating func checkStore() {
        for (index, change) in history.enumerated() where change.revision != UInt64(index + 1) {
            inconsistent += 1
            problem("history: revision \(change.revision) at position \(index + 1)")
        }
        if UInt64(history.count) != head {
            inconsistent += 1
            problem("history: \(history.count) changes for head \(head)")
        }
        var replay: [UUID: Memo] = [:]
        for change in history {
            switch change.kind {
            case .created:
                if replay[change.memo.id] != nil {
                    duplicated += 1
                    problem("history: \(change.memo.id) created at \(change.revision) while it already existed")
                }
                replay[change.memo.id] = change.memo
            case .updated:
                replay[change.memo.id] = change.memo
            case .deleted:
                replay[change.memo.id] = nil
            }
        }
        var ids = Set<UUID>()
        var contents = Set<String>()
        for memo in finalMemos {
            if !ids.insert(memo.id).inserted {
                duplicated += 1
                problem("final list: \(memo.id) twice")
            }
            // Every write carries content no other write used: the same content twice is one create done twice.
            if !contents.insert(memo.content).inserted {
                duplicated += 1
                problem("final list: content '\(memo.content)' twice")
            }
            if replay[memo.id] != memo {
                inconsistent += 1
                problem("final list: \(memo) but the history says \(String(describing: replay[memo.id]))")
            }
        }
        if replay.count != ids.count {
            inconsistent += 1
            problem("the history leaves \(replay.count) memos, the list has \(ids.count)")
        }
    }

    /// Every acknowledged write is in the history at its revision, and each writer's last word on each of its
    /// memos is what the final list holds.
    mutating func checkWriter(_ writer: CrashWriter) {
        acknowledged += writer.acknowledged.count
        for write in writer.acknowledged {
            guard let revision = write.revision else {
                if !history.contains(where: { $0.kind == .deleted && $0.memo.id == write.id }) {
                    lost += 1
                    problem("writer \(writer.number): delete of \(write.id) (not-found on retry) is in no change")
                }
                continue
            }
            guard let change = change(at: revision), change.memo.id == write.id,
                write.kind == .deleted || change.memo.content == write.content,
                change.kind == write.kind
            else {
                lost += 1
                problem("writer \(writer.number): acknowledged \(write.kind.name) of \(write.id) '\(write.content)' "
                    + "at \(revision); the history has \(String(describing: change(at: revision)))")
                continue
            }
        }
        let final = Dictionary(finalMemos.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for (id, content) in writer.live where final[id]?.content != content {
            lost += 1
            problem("writer \(writer.number): \(id) acknowledged as '\(content)', finally "
                + "\(final[id].map { "'\($0.content)'" } ?? "absent")")
        }
        for id in writer.deleted where final[id] != nil {
            cameBack += 1
            problem("writer \(writer.number): \(id) acknowledged as deleted came back: \(final[id]!)")
        }
    }

    /// A watcher printed the seed memo, then every change after it exactly once, in order, as the history has it.
    mutating func checkWatcher(number: Int, lines: [String]) {
        let parsed = lines.compactMap(WatchLine.init)
        if parsed.count != lines.count { problem("watcher \(number): \(lines.count - parsed.count) unreadable lines") }
        guard let first = parsed.first, first.type == nil, first.id == seed.id.lowercasedString else {
            missed += Int(head - seed.revision)
            problem("watcher \(number): did not start with the seed memo")
            return
        }
        var seen: [UInt64: Int] = [:]
        var previous = seed.revision
        for line in parsed.dropFirst() {
            eventsChecked += 1
            guard line.type != nil else {
                mismatched += 1
                problem("watcher \(number): a list line after the start (a reset): \(line)")
                continue
            }
            seen[line.revision, default: 0] += 1
            if line.revision <= previous {
                problem("watcher \(number): revision \(line.revision) after \(previous)")
            }
            previous = max(previous, line.revision)
            guard let change = change(at: line.revision), change.kind.name == line.type,
                change.memo.id.lowercasedString == line.id, change.memo.content == line.content
            else {
                mismatched += 1
                let truth = String(describing: change(at: line.revision))
                problem("watcher \(number): \(line) but the history has \(truth)")
                continue
            }
        }
        if head > seed.revision {
            for revision in (seed.revision + 1)...head where seen[revision] == nil {
                missed += 1
                problem("watcher \(number): revision \(revision) never arrived")
            }
        }
        repeated += seen.values.reduce(0) { $0 + max(0, $1 - 1) }
    }

    var passed: Bool {
        lost == 0 && duplicated == 0 && cameBack == 0 && inconsistent == 0 && missed == 0 && repeated == 0
            && mismatched == 0
    }
}
