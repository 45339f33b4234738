import Foundation
import MemoCLI
import MemoModel
import MemoNet
import MemoProbe
import MemoTLS
import MemoWire

/// The default mode, shaped like `redis-benchmark`: C connections send N requests in all, P at a time.
struct RequestBench {
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
    var threads = 1

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        threads = try arguments.integer("--threads", in: 1...64) ?? threads
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
        let addresses = try target.addresses()
        let content = String(repeating: "x", count: size)
        var pool: [UUID] = []
        if op == .get || op == .update {
            let seeder = try ProbeConnection(address: address, context: context)
            try seeder.hello()
            var generator = BenchIDs()
            let ids = (0..<1000).map { _ in generator.uuid() }
            for batch in stride(from: 0, to: ids.count, by: 100) {
                let sent = try ids[batch..<min(batch + 100, ids.count)].map {
                    try seeder.send(.create(id: $0, insertMicros: nil, content: content))
                }
                for id in sent { _ = try seeder.receive { $0.requestID == id } }
            }
            pool = ids
        }
        let shares = (0..<clients).map { requests / clients + ($0 < requests % clients ? 1 : 0) }
        let drivers = try shares.enumerated().map { index, share in
            let connection = try ProbeConnection(address: addresses[index % addresses.count], context: context)
            try connection.hello()
            return UncheckedBox(Driver(
                connection: connection, count: share, pipeline: pipeline, op: op, content: content, pool: pool,
                seed: index))
        }
        // Like redis-benchmark, a few threads multiplex every connection (epoll), so that the client spends its
        // CPU on requests rather than on thread switches.
        let clock = ContinuousClock()
        let started = clock.now
        for driver in drivers { try driver.value.sendBatch() }
        let errors = try epollConnections(
            count: drivers.count, threads: threads, descriptor: { drivers[$0].value.connection.socket.fileDescriptor },
            readable: { try drivers[$0].value.readable() })
        if let error = errors.first { throw error }
        let elapsed = (clock.now - started).milliseconds / 1000
        let latencies = drivers.flatMap { $0.value.latencies }
        let failed = drivers.reduce(0) { $0 + $1.value.errors }
        guard latencies.count == requests else {
            throw UsageError("only \(latencies.count) of \(requests) requests were answered in time")
        }
        let stats = latencyPercentiles(latencies)
        let rate = Double(latencies.count) / elapsed
        if json {
            print(String(format: "{\"op\":\"%@\",\"clients\":%d,\"pipeline\":%d,\"requests\":%d,\"ops_per_sec\":%.1f,"
                         + "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"errors\":%d}", op.rawValue, clients, pipeline,
                         latencies.count, rate, stats.p50, stats.p99, failed))
        } else {
            print(String(format: "%@: %d requests, %d clients, pipeline %d, %d bytes: %.0f requests/s, "
                         + "p50 %.3f ms, p99 %.3f ms, %d errors", op.rawValue, latencies.count, clients, pipeline,
                         size, rate, stats.p50, stats.p99, failed))
        }
    }

    /// One connection's share: P requests out, then the next P once all P are answered. Per request it writes a
    /// request id and a memo id into the batch's bytes, checks the answer's type and request id from its header
    /// where it lies in the read buffer, and keeps its latency in nanoseconds (`RequestClient.swift`).
    final class Driver {
        let connection: ProbeConnection
        let count: Int
        let pipeline: Int
        let op: Operation
        let pool: [UUID]
        private var next: Int
        private var sent = 0
        private var batch: RequestBatch
        private var table: AnswerTable
        /// The clock (`clock_gettime(CLOCK_MONOTONIC)`, nanoseconds) when the batch in flight was sent.
        private var batchSent: UInt64 = 0
        private var nextID: UInt32 = 100
        private var ids = BenchIDs()
        /// What the connection's reads brought and no whole frame has taken yet.
        private var inbound: [UInt8] = []
        private(set) var latencies: [UInt64] = []
        var errors: Int { table.errors }

        init(connection: ProbeConnection, count: Int, pipeline: Int, op: Operation, content: String, pool: [UUID],
             seed: Int) {
            self.connection = connection
            self.count = count
            self.pipeline = pipeline
            self.op = op
            self.pool = pool
            next = seed
            latencies.reserveCapacity(count)
            let message: Message
            switch op {
            case .create: message = .create(id: UUID(), insertMicros: nil, content: content)
            case .get: message = .get(id: UUID())
            case .update: message = .update(id: UUID(), expectedRevision: nil, content: content)
            case .list: message = .list
            }
            batch = RequestBatch(message, count: min(pipeline, count))
            table = AnswerTable(
                answerType: op == .list ? Message.Kind.memos.rawValue : Message.Kind.memo.rawValue,
                chunked: op == .list)
            inbound.reserveCapacity(16 * 1024)
        }

        func sendBatch() throws {
            let size = min(pipeline, count - sent)
            guard size > 0 else { return }
            // Each latency runs from here (the batch's making, as before) to the read that brings its answer.
            batchSent = monotonicNanos()
            table.expect(firstID: nextID &+ 1, count: size)
            for slot in 0..<size {
                let id: uuid_t?
                switch op {
                case .create: id = ids.uuidBytes()
                case .get, .update: id = pool[next % pool.count].uuid
                case .list: id = nil
                }
                next += 7
                nextID &+= 1
                batch.set(slot, requestID: nextID, id: id)
            }
            sent += size
            // The last batch of a share may be smaller than the pipeline: its frames are the batch's first.
            try connection.sendRaw(size == batch.count ? batch.bytes : Array(batch.bytes[..<(size * batch.frameSize)]))
        }

        /// Takes the answers that arrived. - Returns: true when this connection's share is done.
        func readable() throws -> Bool {
            // The clock is read once per read, for all the answers it brought.
            var readAt: UInt64 = 0
            try connection.stream.readAvailable(appendingTo: &inbound)
            try takeFrames(&inbound) { type, requestID, payload in
                guard try table.answer(type: type, requestID: requestID, payload: payload) else { return }
                if readAt == 0 { readAt = monotonicNanos() }
                latencies.append(readAt &- batchSent)
            }
            if table.outstanding == 0 {
                if sent == count { return true }
                try sendBatch()
            }
            if connection.stream.peerClosed { throw TLSStream.Failure.closed }
            return false
        }
    }
}

/// Hands an object made on one thread to the one thread that uses it afterwards.
// @unchecked Sendable: each box is given to exactly one thread (or read only after that thread has finished),
// so its value is never touched by two threads at once.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
