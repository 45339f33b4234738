import Foundation
import MemoModel
import MemoWire

/// The invariants checked after each fault of `memo-torture gray`, against the final list and the history a
/// healthy server holds (from `oldest`: with a small `--history` the older changes are gone, and only the
/// final list speaks for them).
struct GrayCheck {
    let history: [UInt64: Change]
    let oldest: UInt64
    let finalMemos: [UUID: Memo]
    let head: UInt64
    /// "id content" of every create and update in the history.
    private let written: Set<String>

    var acknowledged = 0
    var failed = 0
    var unknown = 0
    /// Unknown writes that got no answer within the writer's timeout.
    var timedOut = 0
    /// The longest a write waited for its answer, in milliseconds.
    var slowestMilliseconds = 0
    /// Unknown writes that the store shows were done.
    var unknownApplied = 0
    var lost = 0
    var wronglyReported = 0
    var otherViolations = 0
    var watcherGaps = 0
    var watcherRepeats = 0
    var watcherMismatches = 0
    var resyncs = 0
    var eventsChecked = 0
    var problems: [String] = []

    init(history: [Change], oldest: UInt64, finalMemos: [Memo], head: UInt64) {
        self.history = Dictionary(history.map { ($0.revision, $0) }, uniquingKeysWith: { first, _ in first })
        self.oldest = oldest
        self.finalMemos = Dictionary(finalMemos.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.head = head
        written = Set(history.filter { $0.kind != .deleted }.map { "\($0.memo.id) \($0.memo.content)" })
    }

    private mutating func problem(_ text: String) {
        if problems.count < 30 { problems.append(text) }
    }

    /// Whether a create or update with this unique content reached the store.
    private func applied(_ write: GrayWrite) -> Bool {
        switch write.kind {
        case .created, .updated:
            return finalMemos[write.id]?.content == write.content || written.contains("\(write.id) \(write.content)")
        case .deleted:
            return finalMemos[write.id] == nil
        }
    }

    /// A watcher process that ended by itself: `watch` is meant to run until stopped.
    mutating func watcherExited(number: Int, lastWords: String) {
        otherViolations += 1
        problem("watcher \(number) exited by itself: \(lastWords)")
    }

    mutating func checkWriter(_ writer: GrayRecord) {
        acknowledged += writer.acknowledged.count
        failed += writer.failed.count
        unknown += writer.unknown.count
        timedOut += writer.timedOut
        slowestMilliseconds = max(slowestMilliseconds, milliseconds(writer.slowest))
        otherViolations += writer.violations.count
        for violation in writer.violations.prefix(5) { problem(violation) }
        for write in writer.acknowledged {
            guard let revision = write.revision, revision >= oldest else { continue }
            guard let change = history[revision], change.memo.id == write.id, change.kind == write.kind,
                write.kind == .deleted || change.memo.content == write.content
            else {
                lost += 1
                problem("writer \(writer.number): acknowledged \(write.kind.name) of \(write.id) '\(write.content)' at "
                    + "\(revision); the history has \(history[revision].map { "\($0)" } ?? "nothing")")
                continue
            }
        }
        for (id, state) in writer.live where finalMemos[id]?.content != state.content {
            lost += 1
            problem("writer \(writer.number): \(id) acknowledged as '\(state.content)', finally "
                + "\(finalMemos[id].map { "'\($0.content)'" } ?? "absent")")
        }
        for id in writer.deleted where finalMemos[id] != nil {
            lost += 1
            problem("writer \(writer.number): \(id) acknowledged as deleted is in the final list")
        }
        for write in writer.failed where applied(write) {
            wronglyReported += 1
            problem("writer \(writer.number): \(write.kind.name) of \(write.id) '\(write.content)' was answered "
                + "'\(write.answer)' (failed) but is in the store")
        }
        unknownApplied += writer.unknown.filter { applied($0) }.count
    }

    /// One watcher's `watch --json` lines: the seed memo (type existing), then every change after it exactly
    /// once and in order, as the history has it; or, after an explicit resync event `{"event":"resync",
    /// "revision":N}` and the full set it prints, every change after N. It must reach the head.
    mutating func checkWatcher(number: Int, lines: [String], seedRevision: UInt64) {
        var previous = seedRevision
        var inResync = false
        var started = false
        // This watcher's changes checked so far (`eventsChecked` counts every watcher's): only its own first line
        // may be the seed as a change.
        var checkedHere = 0
        for line in lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                otherViolations += 1
                problem("watcher \(number): unreadable line \(line.prefix(200))")
                continue
            }
            if let event = object["event"] as? String {
                if event == "resync", let revision = (object["revision"] as? NSNumber)?.uint64Value {
                    resyncs += 1
                    previous = revision
                    inResync = true
                }
                continue
            }
            guard let type = object["type"] as? String,
                let revision = (object["revision"] as? NSNumber)?.uint64Value,
                let memo = object["memo"] as? [String: Any]
            else {
                otherViolations += 1
                problem("watcher \(number): a line that is no change: \(line.prefix(200))")
                continue
            }
            if type == "existing" {
                // The seed memo at the start, or the full set after a resync; anywhere else it is a diff the
                // watcher made up.
                if !(started == false || inResync) {
                    watcherMismatches += 1
                    problem("watcher \(number): an existing line without a resync: \(line.prefix(200))")
                }
                started = true
                continue
            }
            if revision <= seedRevision && checkedHere == 0 && !inResync {
                // The seed itself, as a change: the watcher's server had not applied it when the watch began.
                started = true
                continue
            }
            started = true
            inResync = false
            eventsChecked += 1
            checkedHere += 1
            if revision <= previous {
                watcherRepeats += 1
                problem("watcher \(number): revision \(revision) after \(previous)")
                continue
            }
            if revision > previous + 1 {
                watcherGaps += Int(revision - previous - 1)
                problem("watcher \(number): revisions \(previous + 1)...\(revision - 1) never arrived")
            }
            previous = revision
            if let change = history[revision] {
                let id = (memo["id"] as? String) ?? ""
                let content = (memo["content"] as? String) ?? ""
                if change.kind.name != type || change.memo.id.lowercasedString != id
                    || (type != "deleted" && Array(change.memo.content.utf8) != Array(content.utf8))
                {
                    watcherMismatches += 1
                    problem("watcher \(number): \(line.prefix(200)) but the history has \(change)")
                }
            }
        }
        if previous < head {
            watcherGaps += Int(head - previous)
            problem("watcher \(number): stopped at revision \(previous), the head is \(head)")
        }
    }

    /// The check of the checks: plants one violation of each kind in copies of a run's records and output, and
    /// checks that each is counted. - Returns: what was not found (empty when every planted fault was).
    static func plantedFaultsMissed(
        history: [Change], oldest: UInt64, finalMemos: [Memo], head: UInt64, records: [GrayRecord],
        watchers: [(Int, [String])], seedRevision: UInt64
    ) -> [String] {
        func run(_ records: [GrayRecord], _ watchers: [(Int, [String])]) -> GrayCheck {
            var check = GrayCheck(history: history, oldest: oldest, finalMemos: finalMemos, head: head)
            for record in records { check.checkWriter(record) }
            for (number, lines) in watchers {
                check.checkWatcher(number: number, lines: lines, seedRevision: seedRevision)
            }
            return check
        }
        let base = run(records, watchers)
        var missed: [String] = []
        // An acknowledged create reported as failed instead: it is in the store.
        if let index = records.firstIndex(where: { $0.acknowledged.contains { $0.kind == .created } }) {
            var planted = records
            let write = planted[index].acknowledged.first { $0.kind == .created }!
            planted[index].failed.append(write)
            if run(planted, watchers).wronglyReported != base.wronglyReported + 1 { missed.append("wrongly reported") }
        } else {
            missed.append("wrongly reported (no acknowledged create to plant)")
        }
        // A create acknowledged that the store never got.
        if !records.isEmpty {
            var planted = records
            let id = UUID()
            planted[0].acknowledged.append(GrayWrite(kind: .created, id: id, content: "planted", revision: head))
            planted[0].live[id] = ("planted", head)
            if run(planted, watchers).lost <= base.lost { missed.append("lost") }
        }
        // A change missing from a watcher's output, and one printed twice.
        if let index = watchers.firstIndex(where: { $0.1.count > 4 }) {
            var gap = watchers
            gap[index].1.remove(at: gap[index].1.count / 2)
            if run(records, gap).watcherGaps != base.watcherGaps + 1 { missed.append("watcher gap") }
            var repeated = watchers
            let middle = repeated[index].1.count / 2
            repeated[index].1.insert(repeated[index].1[middle], at: middle)
            if run(records, repeated).watcherRepeats != base.watcherRepeats + 1 { missed.append("watcher repeat") }
        } else {
            missed.append("watcher gap and repeat (no watcher printed enough)")
        }
        // No false alarm: a watcher checked after another, whose server had not applied the seed when it began,
        // prints the seed as a change, not as existing; that is no repeat (the count of checked events is every
        // watcher's, and the first watcher has events by then). A watcher's output twice, the second copy so.
        if let watcher = watchers.first(where: { $0.1.count > 1 }), let seedLine = watcher.1.first,
            seedLine.contains("\"type\":\"existing\""),
            history.contains(where: { $0.revision == seedRevision && $0.kind == .created })
        {
            var late = watcher
            late.1[0] = seedLine.replacingOccurrences(of: "\"type\":\"existing\"", with: "\"type\":\"created\"")
            if run(records, [watcher, late]).watcherRepeats != run(records, [watcher, watcher]).watcherRepeats {
                missed.append("a late seed counted as a repeat")
            }
        } else {
            missed.append("a late seed (no watcher began with the seed)")
        }
        return missed
    }

    var passed: Bool {
        lost == 0 && wronglyReported == 0 && otherViolations == 0 && watcherGaps == 0 && watcherRepeats == 0
            && watcherMismatches == 0
    }
}
