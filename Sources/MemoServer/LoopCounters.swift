import Glibc
import MemoWire

/// What a request was, for `memo_requests_total{kind}`: a small fixed set.
enum RequestKind: Int, CaseIterable {
    case hello, create, get, list, update, delete, subscribe, unsubscribe, ping, status, restore, other

    init(type: UInt8) {
        switch Message.Kind(rawValue: type) {
        case .hello: self = .hello
        case .create: self = .create
        case .get: self = .get
        case .list, .listPage: self = .list
        case .update: self = .update
        case .delete: self = .delete
        case .subscribe: self = .subscribe
        case .unsubscribe: self = .unsubscribe
        case .ping: self = .ping
        case .status: self = .status
        case .restore: self = .restore
        default: self = .other
        }
    }

    var name: String { "\(self)" }
}

/// How a request ended, for `memo_requests_total{result}`: answered (`ok`), refused for the client's fault (an
/// error below 500: not found, conflict, malformed, ...), or failed for the server's (500 and up).
enum RequestResult: Int, CaseIterable {
    case ok, refused, failed

    init(code: ErrorCode) {
        self = code.rawValue >= 500 ? .failed : .refused
    }

    var name: String { "\(self)" }
}

/// Why a connection closed, for `memo_connection_closes_total{reason}`: a small fixed set.
enum CloseReason: Int, CaseIterable {
    /// The client closed (EOF, close_notify, going-away).
    case client
    /// The server is shutting down.
    case shutdown
    /// The client did not read fast enough.
    case slowConsumer = 2
    /// The client broke the protocol (malformed frame, too many in flight, ...).
    case protocolError
    /// A handshake, frame or closing deadline passed.
    case timeout
    /// TLS failed (handshake refused, bad record).
    case tls
    /// The server was at its connection limit.
    case tooManyConnections
    /// The client's certificate was revoked.
    case revoked
    /// A socket error.
    case io

    /// The reason of a close line (`ServerConnectionMachine.closeReason`), sorted into the set.
    init(reason: String) {
        // A byte search: `String.contains(_:)` goes through the string-processing library, costly per call,
        // and a close asks up to nine times (BENCHMARKS.md, "Instruction counts behind the code's shape").
        let bytes = Array(reason.utf8)
        func has(_ text: StaticString) -> Bool {
            let needle = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            guard needle.count <= bytes.count else { return false }
            return (0...(bytes.count - needle.count)).contains { start in
                bytes[start..<(start + needle.count)].elementsEqual(needle)
            }
        }
        if has("shutting down") {
            self = .shutdown
        } else if has("slow consumer") {
            self = .slowConsumer
        } else if has("too many connections") {
            self = .tooManyConnections
        } else if has("revoked") {
            self = .revoked
        } else if has("TLS") {
            self = .tls
        } else if has("within") || has("deadline") || has("timed out") || has("timeout") {
            self = .timeout
        } else if has("read failed") || has("write failed") || has("epoll") || has("register") {
            self = .io
        } else if has("peer") || has("client") || has("close_notify") || has("hung up") || has("EOF") {
            self = .client
        } else {
            self = .protocolError
        }
    }

    var name: String {
        switch self {
        case .client: return "client"
        case .shutdown: return "shutdown"
        case .slowConsumer: return "slow_consumer"
        case .protocolError: return "protocol_error"
        case .timeout: return "timeout"
        case .tls: return "tls"
        case .tooManyConnections: return "too_many_connections"
        case .revoked: return "revoked"
        case .io: return "io"
        }
    }
}

/// A Prometheus histogram with fixed buckets: per-bucket counts (not cumulative until exposed), their sum and
/// count.
struct Histogram {
    /// Upper bounds in seconds, from 100 µs to 10 s; the last bucket (+Inf) is implicit.
    static let bounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
    ]
    var buckets = [UInt64](repeating: 0, count: Histogram.bounds.count + 1)
    var sumNanoseconds: UInt64 = 0
    var count: UInt64 = 0

    /// The sum in seconds.
    var sum: Double { Double(sumNanoseconds) / 1e9 }

    /// Counts `count` observations of `nanoseconds` (a batch whose items all took that long counts once).
    mutating func observe(nanoseconds: UInt64, count: Int = 1) {
        let many = UInt64(count)
        buckets[Self.bucket(nanoseconds)] &+= many
        sumNanoseconds &+= nanoseconds &* many
        self.count &+= many
    }

    /// The bucket of a duration: comparisons the compiler lays out, not a loop over an array (this runs for every
    /// batch of writes and every change).
    static func bucket(_ nanoseconds: UInt64) -> Int {
        switch nanoseconds {
        case ...100_000: return 0
        case ...250_000: return 1
        case ...500_000: return 2
        case ...1_000_000: return 3
        case ...2_500_000: return 4
        case ...5_000_000: return 5
        case ...10_000_000: return 6
        case ...25_000_000: return 7
        case ...50_000_000: return 8
        case ...100_000_000: return 9
        case ...250_000_000: return 10
        case ...500_000_000: return 11
        case ...1_000_000_000: return 12
        case ...2_500_000_000: return 13
        case ...10_000_000_000: return 14
        default: return 15
        }
    }

    static func + (a: Histogram, b: Histogram) -> Histogram {
        var result = a
        for index in result.buckets.indices { result.buckets[index] &+= b.buckets[index] }
        result.sumNanoseconds &+= b.sumNanoseconds
        result.count &+= b.count
        return result
    }
}

/// The counters of one event loop: written only on that loop's thread, with no lock and no atomic (each loop owns
/// its own), read by a scrape or a `status` request through the loop's task queue, and summed across loops.
struct LoopCounters {
    /// By kind and result: `requests[kind * results + result]`.
    var requests = [UInt64](repeating: 0, count: RequestKind.allCases.count * RequestResult.allCases.count)
    /// Writes applied (created, updated or deleted memos), for the writes-per-second rate.
    var writes: UInt64 = 0
    /// Changes queued for subscribers, one per subscription.
    var deliveries: UInt64 = 0
    /// Subscriber records sent in a batch (`--sends batched`), and the batches (one io_uring submission each).
    var batchedSends: UInt64 = 0
    var sendBatches: UInt64 = 0
    /// Writes: from handing them to the store to their answer.
    var requestDuration = Histogram()
    /// Changes: from the store applying one to its frame being queued for a loop's subscribers.
    var deliveryDelay = Histogram()
    /// Handshakes that succeeded ([0]) and failed ([1]).
    var handshakes: [UInt64] = [0, 0]
    var closes = [UInt64](repeating: 0, count: CloseReason.allCases.count)

    @inline(__always)
    mutating func count(_ kind: RequestKind, _ result: RequestResult) {
        requests[kind.rawValue &* 3 &+ result.rawValue] &+= 1
    }

    func requests(_ kind: RequestKind, _ result: RequestResult) -> UInt64 {
        requests[kind.rawValue * 3 + result.rawValue]
    }

    static func + (a: LoopCounters, b: LoopCounters) -> LoopCounters {
        var result = a
        for index in result.requests.indices { result.requests[index] &+= b.requests[index] }
        result.writes &+= b.writes
        result.deliveries &+= b.deliveries
        result.batchedSends &+= b.batchedSends
        result.sendBatches &+= b.sendBatches
        result.requestDuration = a.requestDuration + b.requestDuration
        result.deliveryDelay = a.deliveryDelay + b.deliveryDelay
        for index in result.handshakes.indices { result.handshakes[index] &+= b.handshakes[index] }
        for index in result.closes.indices { result.closes[index] &+= b.closes[index] }
        return result
    }
}

/// Writes and deliveries per second over the last minute, from a total sampled once a second by the loop's sweep.
struct RateWindow {
    private var samples: [(at: UInt64, writes: UInt64, deliveries: UInt64)] = []
    private var next = 0
    static let slots = 61

    mutating func sample(_ counters: LoopCounters, at now: UInt64) {
        let entry = (now, counters.writes, counters.deliveries)
        if samples.count < Self.slots {
            samples.append(entry)
        } else {
            samples[next] = entry
            next = (next + 1) % Self.slots
        }
    }

    /// Per second since the oldest sample (at most a minute ago) up to `counters`; nil before the first sample.
    func rates(_ counters: LoopCounters, at now: UInt64) -> (writes: Double, deliveries: Double)? {
        guard !samples.isEmpty else { return nil }
        let oldest = samples.count < Self.slots ? samples[0] : samples[next]
        let seconds = Double(now &- min(now, oldest.at)) / 1e9
        guard seconds > 0.5 else { return nil }
        return (Double(counters.writes &- oldest.writes) / seconds,
                Double(counters.deliveries &- oldest.deliveries) / seconds)
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}
