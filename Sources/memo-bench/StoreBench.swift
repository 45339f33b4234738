import Foundation
import MemoCLI
import MemoModel
import MemoSQLite
import MemoStore
import MemoWire

/// `memo-bench store`: creates per second straight into a store, no network, to measure group commit.
struct StoreBench {
    var store = "sqlite"
    var writers = 1
    var requests = 2000
    var size = 64
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        store = try arguments.option("--store") ?? store
        writers = try arguments.integer("--writers", in: 1...10_000) ?? writers
        requests = try arguments.integer("--requests", in: 1...100_000_000) ?? requests
        size = try arguments.integer("--size", in: 0...MemoLimits.maxContentBytes) ?? size
        json = arguments.flag("--json")
        try arguments.finish()
        guard store == "memory" || store == "sqlite" || store.hasPrefix("sqlite:") else {
            throw UsageError("--store takes sqlite:PATH or memory, not '\(store)'")
        }
    }

    func run() async throws {
        var temporary: String?
        let target: any ServingStore
        if store == "memory" {
            target = MemoryStore()
        } else {
            var path = String(store.dropFirst("sqlite:".count))
            if store == "sqlite" {
                let folder = NSTemporaryDirectory() + "memo-bench-\(UUID().uuidString)"
                temporary = folder
                path = folder + "/memos.sqlite"
            }
            target = try SQLiteStore(path: path)
        }
        defer {
            target.close()
            if let temporary { try? FileManager.default.removeItem(atPath: temporary) }
        }
        let content = String(repeating: "x", count: size)
        let perWriter = (0..<writers).map { requests / writers + ($0 < requests % writers ? 1 : 0) }
        let clock = ContinuousClock()
        let started = clock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for count in perWriter {
                group.addTask {
                    var mine: [Double] = []
                    mine.reserveCapacity(count)
                    for _ in 0..<count {
                        let begin = clock.now
                        try await target.create(content: content, id: nil, insertDate: nil)
                        mine.append((clock.now - begin).milliseconds)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = (clock.now - started).milliseconds / 1000
        let stats = LatencyStats(latencies)
        let transactions = (target as? SQLiteStore)?.transactionCount
        let opsPerSecond = Double(requests) / elapsed
        if json {
            var fields: [(String, String)] = [
                ("op", "\"store-create\""), ("store", "\"\(store == "memory" ? "memory" : "sqlite")\""),
                ("writers", "\(writers)"), ("requests", "\(requests)"),
                ("ops_per_sec", String(format: "%.1f", opsPerSecond)),
                ("p50_ms", String(format: "%.3f", stats.p50)), ("p99_ms", String(format: "%.3f", stats.p99)),
            ]
            if let transactions { fields.append(("transactions", "\(transactions)")) }
            print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
        } else {
            print(String(format: "store-create %@ writers=%d requests=%d: %.0f creates/s, p50 %.3f ms, p99 %.3f ms",
                         store, writers, requests, opsPerSecond, stats.p50, stats.p99))
            if let transactions {
                print(String(format: "%d transactions, %.1f writes per transaction", transactions,
                             Double(requests) / Double(max(transactions, 1))))
            }
        }
    }
}

/// Percentiles of a set of latencies in milliseconds.
struct LatencyStats {
    let p50: Double
    let p99: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        func at(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))]
        }
        p50 = at(0.50)
        p99 = at(0.99)
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
