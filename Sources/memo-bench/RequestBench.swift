import Foundation
import MemoCLI
import MemoNet
import MemoProbe
import MemoTLS
import MemoWire

/// The default mode, shaped like `redis-benchmark`: C connections send N requests in all, P at a time.
struct RequestBench {
    static let help = """
        usage: memo-bench [--server HOST:PORT] [--certs DIR] [--clients C] [--requests N] [--pipeline P]
                          [--size BYTES] [--op create|get|update|list] [--json]

        C connections (default 50), each sending P requests (default 1) before reading their answers, until N
        requests in all (default 100000) are answered. --size is the memo content in bytes (default 64). get and
        update work on 1,000 memos the benchmark makes first; list lists whatever the store holds. Prints
        requests per second and latency p50/p99 (from a request's send to its answer); --json prints
        {"op":..,"clients":..,"pipeline":..,"requests":..,"ops_per_sec":..,"p50_ms":..,"p99_ms":..}.
        """

    enum Operation: String {
        case create, get, update, list
    }

    var target: BenchTarget
    var clients = 50
    var requests = 100_000
    var pipeline = 1
    var size = 64
    var op = Operation.create
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        clients = try arguments.integer("--clients", in: 1...10_000) ?? clients
        requests = try arguments.integer("--requests", in: 1...100_000_000) ?? requests
        pipeline = try arguments.integer("--pipeline", in: 1...10_000) ?? pipeline
        size = try arguments.integer("--size", in: 0...MemoLimits.maxContentBytes) ?? size
        if let name = try arguments.option("--op") {
            guard let parsed = Operation(rawValue: name) else {
                throw UsageError("--op takes create, get, update or list, not '\(name)'")
            }
            op = parsed
        }
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() throws {
        raiseDescriptorLimit()
        let context = try ProbeConnection.context(for: target.identity)
        let address = try target.address()
        let content = String(repeating: "x", count: size)
        var pool: [UUID] = []
        if op == .get || op == .update {
            let seeder = try ProbeConnection(address: address, context: context)
            try seeder.hello()
            let ids = (0..<1000).map { _ in UUID() }
            for batch in stride(from: 0, to: ids.count, by: 100) {
                let sent = try ids[batch..<min(batch + 100, ids.count)].map {
                    try seeder.send(.create(id: $0, insertMicros: nil, content: content))
                }
                for id in sent { _ = try seeder.receive { $0.requestID == id } }
            }
            pool = ids
        }
        let shares = (0..<clients).map { requests / clients + ($0 < requests % clients ? 1 : 0) }
        let connections = try shares.map { _ in
            let connection = try ProbeConnection(address: address, context: context)
            try connection.hello()
            return connection
        }
        let results = Recorder<Result<(latencies: [Double], errors: Int), any Error>>()
        let clock = ContinuousClock()
        let started = clock.now
        let op = op
        let pipeline = pipeline
        let poolIDs = pool
        for (index, share) in shares.enumerated() {
            let connection = UncheckedBox(connections[index])
            Thread.detachNewThread {
                results.record(Result {
                    try Self.drive(connection.value, count: share, pipeline: pipeline, op: op, content: content,
                                   pool: poolIDs, seed: index)
                })
            }
        }
        let outcomes = try results.waitFor(clients).map { try $0.get() }
        let elapsed = (clock.now - started).milliseconds / 1000
        let latencies = outcomes.flatMap(\.latencies)
        let errors = outcomes.reduce(0) { $0 + $1.errors }
        let stats = LatencyStats(latencies)
        let rate = Double(latencies.count) / elapsed
        if json {
            print(String(format: "{\"op\":\"%@\",\"clients\":%d,\"pipeline\":%d,\"requests\":%d,\"ops_per_sec\":%.1f,"
                         + "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"errors\":%d}", op.rawValue, clients, pipeline,
                         latencies.count, rate, stats.p50, stats.p99, errors))
        } else {
            print(String(format: "%@: %d requests, %d clients, pipeline %d, %d bytes: %.0f requests/s, "
                         + "p50 %.3f ms, p99 %.3f ms, %d errors", op.rawValue, latencies.count, clients, pipeline,
                         size, rate, stats.p50, stats.p99, errors))
        }
    }

    /// One connection's share: P requests out, P answers in, until `count` are answered.
    private static func drive(
        _ connection: ProbeConnection, count: Int, pipeline: Int, op: Operation, content: String, pool: [UUID],
        seed: Int
    ) throws -> (latencies: [Double], errors: Int) {
        let clock = ContinuousClock()
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        var errors = 0
        var done = 0
        var next = seed
        while done < count {
            let batch = min(pipeline, count - done)
            var sent: [(UInt32, ContinuousClock.Instant)] = []
            var bytes: [UInt8] = []
            var id = UInt32(truncatingIfNeeded: done + 1)
            for _ in 0..<batch {
                let message: Message
                switch op {
                case .create: message = .create(id: UUID(), insertMicros: nil, content: content)
                case .get: message = .get(id: pool[next % pool.count])
                case .update: message = .update(id: pool[next % pool.count], expectedRevision: nil, content: content)
                case .list: message = .list
                }
                next += 7
                bytes += message.frame(requestID: id)
                sent.append((id, clock.now))
                id &+= 1
            }
            try connection.sendRaw(bytes)
            for (requestID, at) in sent {
                var finished = false
                while !finished {
                    let (frame, message) = try connection.receive { $0.requestID == requestID }
                    switch message {
                    case .memos(_, let last, _): finished = last
                    case .error: errors += 1; finished = true
                    default: finished = true
                    }
                    _ = frame
                }
                latencies.append((clock.now - at).milliseconds)
            }
            done += batch
        }
        return (latencies, errors)
    }
}

/// Hands a connection made on one thread to the thread that will use it alone.
// @unchecked Sendable: each box is given to exactly one thread, which is the only one to touch the value.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
