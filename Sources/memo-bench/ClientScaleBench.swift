import Foundation
import MemoCLI
import MemoClient
import MemoCore
import MemoTUI
import MemoViewModels

/// `memo-bench client`: what the front end pays per remote change and per filter keystroke with N memos
/// mirrored, on the real `Mirror` and the real `ListViewModel`, in-process (no server, no terminal).
struct ClientScaleBench {
    static let help = """
        usage: memo-bench client [--memos N] [--size BYTES] [--changes K] [--filter TEXT] [--json]

        Builds a Mirror from a snapshot of N memos (default 100000) of BYTES content (default 100), shows it in a
        ListViewModel, then:
          change     K times (default 20) applies one remote create to the Mirror and hands the list to the
                     view model as RemoteStore does after a batch; median and worst time per change
          keystroke  types TEXT (default 99999) into the filter one character at a time, then deletes it with
                     Backspace; median and worst time per keystroke (the view model's state, ready to draw)
        """

    var memos = 100_000
    var size = 100
    var changes = 20
    var filter = "99999"
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        memos = try arguments.integer("--memos", in: 1...10_000_000) ?? memos
        size = try arguments.integer("--size", in: 16...MemoLimits.maxContentBytes) ?? size
        changes = try arguments.integer("--changes", in: 1...10_000) ?? changes
        filter = try arguments.option("--filter") ?? filter
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() throws {
        let start = ContinuousClock.now
        var mirror = Mirror()
        let base = (0..<memos).map { memo($0) }
        _ = mirror.apply([.snapshot(revision: UInt64(memos), last: true, memos: base)])
        let snapshotMillis = (ContinuousClock.now - start).millis
        let storage = BenchListStorage(mirror.list)
        let model = ListViewModel(storage: storage)
        defer { model.close() }

        var changeTimes: [Double] = []
        for index in 0..<changes {
            var created = memo(memos + index)
            created.revision = mirror.revision + 1
            let change = Change(revision: created.revision, kind: .created, memo: created)
            let began = ContinuousClock.now
            _ = mirror.apply([.change(change)])
            storage.list.send(mirror.list)
            changeTimes.append((ContinuousClock.now - began).millis)
        }
        precondition(model.current.visible.count == memos + changes, "the view model missed a change")

        var keyTimes: [Double] = []
        for character in filter {
            keyTimes.append(time { model.editFilter { $0.insert(character) } })
        }
        let narrowed = model.current.visible.count
        for _ in filter {
            keyTimes.append(time { model.editFilter { $0.backspace() } })
        }
        precondition(model.current.visible.count == memos + changes, "the filter did not clear")

        let change = Summary(changeTimes)
        let key = Summary(keyTimes)
        if json {
            print("""
                {"memos":\(memos),"size":\(size),"snapshot_ms":\(snapshotMillis.rounded3),\
                "change_median_ms":\(change.median.rounded3),"change_max_ms":\(change.max.rounded3),\
                "keystroke_median_ms":\(key.median.rounded3),"keystroke_max_ms":\(key.max.rounded3),\
                "filter_matches":\(narrowed)}
                """)
        } else {
            print("memos \(memos) of \(size) bytes; mirror from snapshot \(snapshotMillis.rounded3) ms")
            print("remote change: median \(change.median.rounded3) ms, worst \(change.max.rounded3) ms "
                + "(\(changes) changes)")
            print("filter keystroke: median \(key.median.rounded3) ms, worst \(key.max.rounded3) ms "
                + "(\(keyTimes.count) keys, '\(filter)' matched \(narrowed))")
        }
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

/// A storage that only lists: the bench sends the Mirror's list to it the way RemoteStore does after each batch.
/// Writes are not part of what is measured.
private final class BenchListStorage: MemoStorage {
    let list: Subject<[Memo]>

    init(_ memos: [Memo]) { list = Subject(memos) }

    func memoList() -> Subject<[Memo]> { list }
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
}

extension Double {
    fileprivate var rounded3: String { String(format: "%.3f", self) }
}
