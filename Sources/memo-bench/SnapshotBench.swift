import Foundation
import MemoCLI
import MemoClient
import MemoModel
import MemoProbe
import MemoWire

/// `memo-bench snapshot`: how long a fresh client takes to hold a ready mirror of an N-memo store, and what one
/// change then costs a subscriber on the wire.
struct SnapshotBench {
    var target: BenchTarget
    var memos = 100_000
    var size = 64
    var runs = 3
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        memos = try arguments.integer("--memos", in: 1...10_000_000) ?? memos
        size = try arguments.integer("--size", in: 0...MemoLimits.maxContentBytes) ?? size
        runs = try arguments.integer("--runs", in: 1...100) ?? runs
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() async throws {
        let context = try ProbeConnection.context(for: target.identity)
        let probe = try ProbeConnection(address: try target.address(), context: context)
        try probe.hello()
        // `list` answers in chunks, the last one flagged.
        let listID = try probe.send(.list)
        var count = 0
        while true {
            guard case .memos(_, let last, let part) = try probe.receive({ $0.requestID == listID }).1 else {
                throw TLSStream.Failure.closed
            }
            count += part.count
            if last { break }
        }
        let content = String(repeating: "m", count: size)
        var generator = BenchIDs()
        while count < memos {
            let batch = min(512, memos - count)
            var bytes: [UInt8] = []
            var ids: [UInt32] = []
            for index in 0..<batch {
                let id = UInt32(1_000_000 + index)
                ids.append(id)
                bytes += Message.create(id: generator.uuid(), insertMicros: nil, content: content).frame(requestID: id)
            }
            try probe.sendRaw(bytes)
            for id in ids { _ = try probe.receive { $0.requestID == id } }
            count += batch
        }

        var timings: [Double] = []
        var configuration = ClientConfiguration(server: target.server, certificatesDirectory: target.certs)
        configuration.requestTimeout = .seconds(60)
        for _ in 0..<runs {
            let clock = ContinuousClock()
            let started = clock.now
            let client = try await MemoConnection.connect(configuration)
            let store = try RemoteStore(client: client)
            store.startMirror()
            try await store.waitUntilFresh(timeout: .seconds(120))
            timings.append((clock.now - started).milliseconds)
            guard store.memoList().value?.count ?? 0 >= memos else {
                throw UsageError("the mirror holds fewer memos than the store")
            }
            client.close()
        }

        // One change, seen by a subscriber that already holds the snapshot.
        let subscriber = try ProbeConnection(address: try target.address(), context: context)
        guard case .welcome(_, let revision, _, _, _) = try subscriber.hello() else { throw TLSStream.Failure.closed }
        let subscription = try subscriber.send(.subscribe(after: revision))
        _ = try subscriber.receive { $0.requestID == subscription }
        guard case .memo(let memo) = try probe.request(.create(id: nil, insertMicros: nil, content: content)) else {
            throw TLSStream.Failure.closed
        }
        let (frame, _) = try subscriber.receive { $0.requestID == subscription }
        let changeBytes = frame.payload.count + WireProtocol.headerSize
        _ = memo

        let sorted = timings.sorted()
        let median = sorted[sorted.count / 2]
        if json {
            print(String(format: "{\"op\":\"snapshot\",\"memos\":%d,\"runs\":%d,\"best_ms\":%.1f,\"median_ms\":%.1f,"
                         + "\"change_bytes\":%d}", count, runs, sorted[0], median, changeBytes))
        } else {
            print(String(format: "snapshot: %d memos: mirror ready in %.1f ms (best of %d), median %.1f ms", count,
                         sorted[0], runs, median))
            print("one change then costs a subscriber \(changeBytes) bytes of frame")
        }
    }
}
