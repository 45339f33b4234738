import Foundation
import MemoCLI
import MemoClient
import MemoModel
import MemoTUI
import MemoViewModels

/// `memo-bench client`: what the front end pays per remote change and per filter keystroke with N memos
/// mirrored, on the real `Mirror` and the real `ListViewModel`, in-process (no server, no terminal).
struct ClientScaleBench {
    var memos = 100_000
    var size = 100
    var changes = 20
    var storm = 20_000
    var filter = "99999"
    var rounds = 1
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        memos = try arguments.integer("--memos", in: 1...10_000_000) ?? memos
        size = try arguments.integer("--size", in: 16...MemoLimits.maxContentBytes) ?? size
        changes = try arguments.integer("--changes", in: 1...10_000) ?? changes
        storm = try arguments.integer("--storm", in: 0...10_000_000) ?? storm
        filter = try arguments.option("--filter") ?? filter
        rounds = try arguments.integer("--rounds", in: 1...1_000) ?? rounds
        json = arguments.flag("--json")
        try arguments.finish()
    }

    /// On the front end's loop, as the terminal runs the view model: each delta the storage sends is hopped there,
    /// so a change's time is the send plus the wait for the loop to apply it (`FrontEnd.drained`).
    @FrontEnd
    func run() async throws {
        let start = ContinuousClock.now
        var mirror = Mirror()
        let base = (0..<memos).map { memo($0) }
        _ = mirror.apply([.snapshot(revision: UInt64(memos), last: true, memos: base)])
        let snapshotMillis = (ContinuousClock.now - start).millis
        let storage = BenchListStorage(mirror.list)
        let model = ListViewModel(storage: storage)
        defer { model.close() }
        await FrontEnd.drained()
        let readyMillis = (ContinuousClock.now - start).millis

        var changeTimes: [Double] = []
        for index in 0..<changes {
            var created = memo(memos + index)
            created.revision = mirror.revision + 1
            let change = Change(revision: created.revision, kind: .created, memo: created)
            let began = ContinuousClock.now
            storage.send(mirror.applyShowing([.change(change)]).delta)
            await FrontEnd.drained()
            changeTimes.append((ContinuousClock.now - began).millis)
        }
        precondition(model.current.visible.count == memos + changes, "the view model missed a change")
        let stormRate = await runStorm(&mirror, storage)
        precondition(model.current.memos.count == mirror.table.count, "the view model missed a storm change")

        var keyTimes: [Double] = []
        var firstKeys: [Double] = []
        // The front end's thread's CPU time for each first keystroke: on a machine shared with other work, the
        // figure that does not count the time the thread waited for a core.
        var firstKeysCPU: [Double] = []
        let total = model.current.memos.count
        var narrowed = 0
        for _ in 0..<rounds {
            for (offset, character) in filter.enumerated() {
                let cpu = Self.threadCPUMillis()
                keyTimes.append(time { model.editFilter { $0.insert(character) } })
                if offset == 0 {
                    firstKeysCPU.append(Self.threadCPUMillis() - cpu)
                    firstKeys.append(keyTimes[keyTimes.count - 1])
                }
            }
            narrowed = model.current.visible.count
            for _ in filter {
                keyTimes.append(time { model.editFilter { $0.backspace() } })
            }
            precondition(model.current.visible.count == total, "the filter did not clear")
        }
        let firstKey = Summary(firstKeys).median
        let firstKeyCPU = Summary(firstKeysCPU).median

        let change = Summary(changeTimes)
        let key = Summary(keyTimes)
        if json {
            print("""
                {"memos":\(memos),"size":\(size),"snapshot_ms":\(snapshotMillis.rounded3),\
                "ready_ms":\(readyMillis.rounded3),\
                "change_median_ms":\(change.median.rounded3),"change_max_ms":\(change.max.rounded3),\
                "storm_changes_per_s":\(Int(stormRate)),"keystroke_first_ms":\(firstKey.rounded3),\
                "keystroke_first_cpu_ms":\(firstKeyCPU.rounded3),\
                "keystroke_median_ms":\(key.median.rounded3),"keystroke_max_ms":\(key.max.rounded3),\
                "filter_matches":\(narrowed)}
                """)
        } else {
            print("memos \(memos) of \(size) bytes; mirror from snapshot \(snapshotMillis.rounded3) ms, "
                + "list view model ready \(readyMillis.rounded3) ms")
            print("remote change: median \(change.median.rounded3) ms, worst \(change.max.rounded3) ms "
                + "(\(changes) changes)")
            print("write storm: \(Int(stormRate)) changes/s followed (\(storm) changes, 16 a read)")
            print("filter keystroke: first \(firstKey.rounded3) ms, median \(key.median.rounded3) ms, "
                + "worst \(key.max.rounded3) ms (\(keyTimes.count) keys, '\(filter)' matched \(narrowed))"
                + (rounds > 1 ? "; first keys: " + firstKeys.map(\.rounded3).joined(separator: " ") : ""))
            print("first filter keystroke, the front end thread's CPU: median \(firstKeyCPU.rounded3) ms"
                + (rounds > 1 ? " (" + firstKeysCPU.map(\.rounded3).joined(separator: " ") + ")" : ""))
        }
    }

    /// Applies `storm` changes (creates, updates and deletes, 16 a read) through the mirror to the view model.
    /// - Returns: changes per second.
    @FrontEnd
    private func runStorm(_ mirror: inout Mirror, _ storage: BenchListStorage) async -> Double {
        guard storm > 0 else { return 0 }
        var random = SystemRandomNumberGenerator()
        var next = memos + changes
        let began = ContinuousClock.now
        var done = 0
        while done < storm {
            var batch: [SubscriptionEvent] = []
            // What this read already did, so that its later changes build on it.
            var touched: [UUID: Memo?] = [:]
            for _ in 0..<min(16, storm - done) {
                let revision = mirror.revision + UInt64(batch.count) + 1
                let pick = Self.id(Int.random(in: 0..<next, using: &random))
                let existing = touched[pick] ?? mirror.table.memo(pick)
                let change: Change
                switch (Int.random(in: 0..<3, using: &random), existing) {
                case (1, var memo?):
                    memo.content = "edited \(revision) " + memo.content.dropFirst(16)
                    memo.revision = revision
                    change = Change(revision: revision, kind: .updated, memo: memo)
                case (2, var memo?):
                    memo.revision = revision
                    change = Change(revision: revision, kind: .deleted, memo: memo)
                default:
                    var created = memo(next)
                    next += 1
                    created.revision = revision
                    change = Change(revision: revision, kind: .created, memo: created)
                }
                touched[change.memo.id] = change.kind == .deleted ? .some(nil) : change.memo
                batch.append(.change(change))
            }
            storage.send(mirror.applyShowing(batch).delta)
            done += batch.count
        }
        await FrontEnd.drained()
        return Double(storm) / (ContinuousClock.now - began).inSeconds
    }

    /// Memo `index`: its number, then filler to `size` bytes (some of it Hangul, so the search meets
    /// multi-byte UTF-8).
    private func memo(_ index: Int) -> Memo {
        var content = "memo \(index) 메모 "
        let filler = "lorem ipsum dolor sit amet "
        while content.utf8.count < size { content += filler }
        content = String(decoding: content.utf8.prefix(size), as: UTF8.self)
        let micros = 1_700_000_000_000_000 + Int64(index)
        return Memo(id: Self.id(index), content: content, insertMicros: micros, updateMicros: micros,
                    revision: UInt64(index + 1))
    }

    /// A fixed id per index, so runs are alike.
    private static func id(_ index: Int) -> UUID {
        let n = UInt64(index)
        var bytes = [UInt8](repeating: 0, count: 16)
        for shift in 0..<8 { bytes[15 - shift] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(shift))) }
        bytes[6] = 0x40
        bytes[8] = 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// CPU time of the calling thread, user and system.
    private static func threadCPUMillis() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1e6
    }

    private func time(_ body: () -> Void) -> Double {
        let began = ContinuousClock.now
        body()
        return (ContinuousClock.now - began).millis
    }
}

private struct Summary {
    var median: Double
    var max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        median = sorted[sorted.count / 2]
        max = sorted.last ?? 0
    }
}

/// A storage that only lists: the bench sends the Mirror's position edits to it the way RemoteStore does after
/// each read. Writes are not part of what is measured.
private final class BenchListStorage: MemoStorage {
    private let initial: [Memo]
    private let deltas = Subject<ListDelta>()

    init(_ memos: [Memo]) { initial = memos }

    func send(_ delta: ListDelta?) {
        if let delta { deltas.send(delta) }
    }

    func watchList(_ handler: @escaping @Sendable (ListDelta) -> Void) -> Subscription {
        deltas.subscribe(prefix: [.reset(initial)], handler)
    }

    func memoList() -> Subject<[Memo]> { Subject(initial) }
    func create(content: String, id: UUID?, insertDate: Date?) async throws -> Memo { throw unsupported }
    func get(id: UUID) async throws -> Memo { throw unsupported }
    func update(id: UUID, content: String, expectedRevision: UInt64?) async throws -> Memo { throw unsupported }
    func delete(id: UUID, expectedRevision: UInt64?) async throws -> Memo { throw unsupported }
    private var unsupported: MemoError { .invalidArgument("memo-bench client does not write") }
}

extension Duration {
    fileprivate var millis: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    fileprivate var inSeconds: Double { millis / 1000 }
}

extension Double {
    fileprivate var rounded3: String { String(format: "%.3f", self) }
}
