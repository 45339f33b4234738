import Foundation
import MemoCLI
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoProbe
import MemoWire

/// Nanoseconds on the monotonic clock, comparable between processes on one machine (and with the servers'
/// stage traces).
func monotonicNanos() -> UInt64 { StageTrace.monotonicNanos() }

/// Delivery latencies of a fan-out run, per change and subscriber.
struct FanoutResult {
    var deliveries: [Double] = []
    /// For each change, the latency of its last delivery.
    var lastPerChange: [Double] = []
    var missing = 0
    var cpuPerDeliveryMicros: Double?

    /// Gathers each subscriber's latencies (by change number) and the server's CPU seconds over the run.
    init(changes: Int, latencies: [LatencyTable], cpuSeconds: Double?) {
        for change in 0..<changes {
            var last = 0.0
            for table in latencies {
                if let latency = table[change] {
                    deliveries.append(latency)
                    last = max(last, latency)
                } else {
                    missing += 1
                }
            }
            lastPerChange.append(last)
        }
        if let cpuSeconds, !deliveries.isEmpty {
            cpuPerDeliveryMicros = cpuSeconds * 1e6 / Double(deliveries.count)
        }
    }

    func report(json: Bool, label: String, subscribers: Int, changes: Int, rate: Int) {
        let all = LatencyStats(deliveries)
        let last = LatencyStats(lastPerChange)
        if json {
            var text = String(format: "{\"op\":\"%@\",\"subscribers\":%d,\"changes\":%d,\"rate\":%d,"
                              + "\"deliveries\":%d,\"missing\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                              + "\"last_p50_ms\":%.3f,\"last_p99_ms\":%.3f", label, subscribers, changes, rate,
                              deliveries.count, missing, all.p50, all.p99, last.p50, last.p99)
            if let cpu = cpuPerDeliveryMicros { text += String(format: ",\"server_cpu_us_per_delivery\":%.3f", cpu) }
            print(text + "}")
        } else {
            print(String(format: "%@: %d subscribers, %d changes at %d/s: %d deliveries (%d missing); "
                         + "latency p50 %.3f ms p99 %.3f ms; last subscriber p50 %.3f ms p99 %.3f ms",
                         label, subscribers, changes, rate, deliveries.count, missing, all.p50, all.p99,
                         last.p50, last.p99))
            if let cpu = cpuPerDeliveryMicros {
                print(String(format: "server CPU: %.3f µs per delivery", cpu))
            }
        }
    }
}

/// One subscriber's delivery latencies in milliseconds, by change number, written by the one thread that polls its
/// connection. An array, not a dictionary: the receiving client shares the cores with the servers it measures,
/// so its cost per delivery is kept small.
final class LatencyTable {
    private var values: [Double]
    /// How many changes were received.
    private(set) var count = 0

    init(changes: Int) {
        values = Array(repeating: .nan, count: changes)
    }

    subscript(change: Int) -> Double? {
        values.indices.contains(change) && !values[change].isNaN ? values[change] : nil
    }

    /// Records the first receipt of `change`; a number outside the run or a repeat is ignored.
    func record(_ change: Int, _ latency: Double) {
        guard values.indices.contains(change), values[change].isNaN else { return }
        values[change] = latency
        count += 1
    }

    /// The change number and send time (monotonic nanoseconds) that the fan-out benchmarks write into each memo
    /// or message: `NUMBER NANOS`, read from the UTF-8 bytes without splitting the string.
    static func stamp(_ text: String) -> (change: Int, sent: UInt64)? {
        var text = text
        return text.withUTF8 { utf8 -> (change: Int, sent: UInt64)? in
            guard let space = utf8.firstIndex(of: UInt8(ascii: " ")),
                  let change = decimal(utf8[..<space]), let sent = decimal(utf8[(space + 1)...])
            else { return nil }
            return (Int(change), sent)
        }
    }

    private static func decimal(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// Reads many connections with poll(2) from a few threads until each has seen `expected` items.
/// `readable` gets a connection's index and the time poll returned (monotonic nanoseconds): the moment its bytes
/// were known to be there, before this thread spent time reading the other ready connections, so that a latency
/// measured from it is the server's and the machine's rather than this client's own work on the other sockets
/// (an item sent after that moment arrived between it and its read: time it at its read).
func pollConnections(
    count: Int, threads: Int, descriptor: @escaping @Sendable (Int) -> Int32,
    readable: @escaping @Sendable (Int, UInt64) throws -> Bool, deadline: ContinuousClock.Instant
) -> [any Error] {
    let errors = Recorder<(any Error)?>()
    for thread in 0..<threads {
        let mine = Array(stride(from: thread, to: count, by: threads))
        Thread.detachNewThread {
            var open = Set(mine)
            var fds = [pollfd]()
            do {
                while !open.isEmpty, ContinuousClock.now < deadline {
                    let order = Array(open)
                    fds = order.map { pollfd(fd: descriptor($0), events: Int16(POLLIN), revents: 0) }
                    let ready = poll(&fds, nfds_t(fds.count), 100)
                    if ready <= 0 { continue }
                    let woke = monotonicNanos()
                    for (slot, index) in order.enumerated() where fds[slot].revents != 0 {
                        if try readable(index, woke) { open.remove(index) }
                    }
                }
                errors.record(nil)
            } catch {
                errors.record(error)
            }
        }
    }
    return errors.waitFor(threads).compactMap { $0 }
}

/// `memo-bench fanout`: S subscribers, K changes at R per second, delivery latency.
struct FanoutBench {
    var target: BenchTarget
    var subscribers = 1000
    var changes = 1000
    var rate = 100
    var json = false
    var receipts: String?

    init(_ arguments: inout Arguments) throws(UsageError) {
        target = try BenchTarget(&arguments)
        subscribers = try arguments.integer("--subscribers", in: 1...100_000) ?? subscribers
        changes = try arguments.integer("--changes", in: 1...10_000_000) ?? changes
        rate = try arguments.integer("--rate", in: 1...1_000_000) ?? rate
        json = arguments.flag("--json")
        receipts = try arguments.option("--receipts")
        try arguments.finish()
    }

    /// One subscriber's state, touched only by the thread that polls it.
    final class Subscriber: @unchecked Sendable {
        // @unchecked Sendable: each subscriber is polled by exactly one thread after setup.
        let connection: ProbeConnection
        let subscription: UInt32
        let latencies: LatencyTable
        /// By change number: its revision, send time and receipt time, kept only for `--receipts`.
        var receipts: [Int: (revision: UInt64, sent: UInt64, at: UInt64)] = [:]
        init(_ connection: ProbeConnection, _ subscription: UInt32, changes: Int) {
            self.connection = connection
            self.subscription = subscription
            latencies = LatencyTable(changes: changes)
        }
    }

    func run() throws {
        raiseDescriptorLimit()
        let context = try ProbeConnection.context(for: target.identity)
        let address = try target.address()
        let addresses = try target.addresses()
        var subs: [Subscriber] = []
        for index in 0..<subscribers {
            let connection = try ProbeConnection(address: addresses[index % addresses.count], context: context)
            guard case .welcome(_, let revision, _, _, _) = try connection.hello() else { continue }
            let id = try connection.send(.subscribe(after: revision))
            _ = try connection.receive { $0.requestID == id }
            subs.append(Subscriber(connection, id, changes: changes))
        }
        let writer = UncheckedBox(try ProbeConnection(address: address, context: context))
        try writer.value.hello()
        let expected = changes
        let all = subs
        let cpuBefore = target.serverCPUSeconds()
        let deadline = ContinuousClock.now + .seconds(Double(changes) / Double(rate) + 30)
        let writerDone = Recorder<(any Error)?>()
        let pace = 1.0 / Double(rate)
        Thread.detachNewThread {
            do {
                let start = Date()
                for index in 0..<expected {
                    let due = start.addingTimeInterval(Double(index) * pace)
                    let wait = due.timeIntervalSinceNow
                    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                    try writer.value.send(.create(id: nil, insertMicros: nil, content: "\(index) \(monotonicNanos())"))
                    _ = try writer.value.readAvailable()
                }
                writerDone.record(nil)
            } catch {
                writerDone.record(error)
            }
        }
        let keepReceipts = receipts != nil
        let errors = pollConnections(
            count: all.count, threads: 2, descriptor: { all[$0].connection.socket.fileDescriptor },
            readable: { index, woke in
                let subscriber = all[index]
                try subscriber.connection.readAvailable { type, requestID, payload in
                    guard requestID == subscriber.subscription, type == Message.Kind.change.rawValue,
                          case .change(let change) = try Message(type: type, payload: &payload),
                          let (sequence, sent) = LatencyTable.stamp(change.memo.content)
                    else { return }
                    // Sent after poll returned: it arrived between then and this read.
                    let at = sent <= woke ? woke : monotonicNanos()
                    subscriber.latencies.record(sequence, Double(at - sent) / 1e6)
                    if keepReceipts { subscriber.receipts[sequence] = (change.revision, sent, at) }
                }
                return subscriber.latencies.count >= expected || subscriber.connection.peerClosed
            }, deadline: deadline)
        if let error = writerDone.waitFor(1).first ?? nil { throw error }
        if let error = errors.first { throw error }
        let cpuAfter = target.serverCPUSeconds()
        let result = FanoutResult(
            changes: changes, latencies: all.map(\.latencies),
            cpuSeconds: cpuAfter.flatMap { a in cpuBefore.map { a - $0 } })
        result.report(json: json, label: "fanout", subscribers: all.count, changes: changes, rate: rate)
        if let receipts { try writeReceipts(all, servers: addresses.count, to: receipts) }
        guard addresses.count > 1 else { return }
        for (server, served) in addresses.enumerated() {
            let group = all.indices.filter { $0 % addresses.count == server }.map { all[$0].latencies }
            FanoutResult(changes: changes, latencies: group, cpuSeconds: nil).report(
                json: json, label: server == 0 ? "fanout on the writer's server \(served)" : "fanout on \(served)",
                subscribers: group.count, changes: changes, rate: rate)
        }
    }
}

extension FanoutBench {
    /// One line per change and server: its revision, send time, and the median and last receipt on that server.
    func writeReceipts(_ subscribers: [Subscriber], servers: Int, to path: String) throws {
        var text = ""
        for server in 0..<servers {
            let group = subscribers.indices.filter { $0 % servers == server }.map { subscribers[$0].receipts }
            for change in 0..<changes {
                let seen = group.compactMap { $0[change] }
                guard let first = seen.first else { continue }
                let times = seen.map(\.at).sorted()
                text += "\(first.revision) \(server) \(first.sent) \(times[times.count / 2]) \(times.last!)\n"
            }
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }
}

/// Like `pollConnections`, but on MemoNet's epoll loops (as `redis-benchmark` uses epoll), so that the client's
/// own cost per wake-up does not grow with the number of connections.
func epollConnections(
    count: Int, threads: Int, descriptor: @escaping @Sendable (Int) -> Int32,
    readable: @escaping @Sendable (Int) throws -> Bool
) throws -> [any Error] {
    let outcomes = Recorder<(any Error)?>()
    let loops = try (0..<threads).map { try EventLoop.start(name: "bench-\($0)") }
    defer { for loop in loops { loop.shutdownGracefully() } }
    for index in 0..<count {
        let loop = loops[index % loops.count]
        loop.execute {
            let handler = ConnectionHandler(index: index, loop: loop, readable: readable) { outcomes.record($0) }
            do {
                handler.registration = try loop.register(
                    fileDescriptor: descriptor(index), interest: .readable, handler: handler)
            } catch {
                outcomes.record(error)
            }
        }
    }
    return outcomes.waitFor(count).compactMap { $0 }
}

/// Calls `readable` for one connection until it says it is done, then stops watching it.
private final class ConnectionHandler: EventHandler {
    let index: Int
    let loop: EventLoop
    let onReadable: (Int) throws -> Bool
    let finished: ((any Error)?) -> Void
    var registration: Registration?

    init(index: Int, loop: EventLoop, readable: @escaping (Int) throws -> Bool,
         finished: @escaping ((any Error)?) -> Void) {
        self.index = index
        self.loop = loop
        onReadable = readable
        self.finished = finished
    }

    func readable() {
        do {
            if try onReadable(index) { finish(nil) }
        } catch {
            finish(error)
        }
    }

    func hangup() {
        finish(TLSStream.Failure.closed)
    }

    private func finish(_ error: (any Error)?) {
        guard let registration else { return }
        loop.deregister(registration)
        self.registration = nil
        finished(error)
    }
}
