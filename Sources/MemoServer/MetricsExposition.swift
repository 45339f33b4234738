import Foundation
import MemoModel
import MemoTLS

/// The Prometheus text exposition (format 0.0.4) of a server's counters, gauges and process figures. README's
/// "Metrics" lists every name.
enum MetricsExposition {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    static func text(_ snapshot: ServerSnapshot, shared: ServerShared) -> String {
        var out = Writer()
        let counters = snapshot.counters
        let gauges = snapshot.gauges

        out.family("memo_requests_total", "counter", "Requests answered, by kind and result (refused: the "
            + "client's fault, an error below 500; failed: the server's, 500 and up).")
        for kind in RequestKind.allCases {
            for result in RequestResult.allCases {
                out.sample("memo_requests_total", ["kind": kind.name, "result": result.name],
                           Double(counters.requests(kind, result)))
            }
        }
        out.family("memo_deliveries_total", "counter", "Changes queued for subscribers, one per subscription.")
        out.sample("memo_deliveries_total", [:], Double(counters.deliveries))
        out.family("memo_batched_sends_total", "counter", "Subscribers' records sent in a batch, one io_uring "
            + "submission per change and thread (--sends batched); the rest of the deliveries went by send(2).")
        out.sample("memo_batched_sends_total", [:], Double(counters.batchedSends))
        out.family("memo_send_batches_total", "counter", "io_uring submissions of subscribers' records.")
        out.sample("memo_send_batches_total", [:], Double(counters.sendBatches))
        out.family("memo_connections", "gauge", "Open connections by role (handshaking: before TLS and hello "
            + "are done).")
        out.sample("memo_connections", ["role": "read_write"], Double(gauges.readWrite))
        out.sample("memo_connections", ["role": "read_only"], Double(gauges.readOnly))
        out.sample("memo_connections", ["role": "handshaking"], Double(gauges.handshaking))
        out.family("memo_subscribers", "gauge", "Open subscriptions.")
        out.sample("memo_subscribers", [:], Double(gauges.subscriptions))
        out.family("memo_queued_bytes", "gauge", "Bytes queued for clients that their sockets have not taken.")
        out.sample("memo_queued_bytes", [:], Double(gauges.queuedBytes))

        let store = shared.store.storeStatus
        out.family("memo_head_revision", "gauge", "The store's current revision.")
        out.sample("memo_head_revision", [:], Double(shared.store.revision))
        out.family("memo_oldest_retained_revision", "gauge", "The oldest revision a subscription may resume after.")
        out.sample("memo_oldest_retained_revision", [:], Double(store.oldestRetained))
        out.family("memo_memos", "gauge", "Memos in the store.")
        out.sample("memo_memos", [:], Double(store.memoCount))
        out.family("memo_feed_lag_seconds", "gauge", "PostgreSQL: seconds since the feed last read the changes "
            + "table to its end or applied a change (up to about 1 s while healthy); 0 for a store of its own.")
        out.sample("memo_feed_lag_seconds", [:], store.shared?.secondsSinceFeedProgress ?? 0)
        if let shared = store.shared {
            out.family("memo_feed_behind_revisions", "gauge", "PostgreSQL: revisions the database holds that this "
                + "server has not applied, as far as it knows.")
            out.sample("memo_feed_behind_revisions", [:],
                       Double(shared.databaseHead &- min(shared.databaseHead, shared.appliedRevision)))
        }
        out.family("memo_ready", "gauge", "1 when the server is ready (as /readyz), 0 when not.")
        out.sample("memo_ready", [:], shared.readiness.isReady ? 1 : 0)

        out.histogram("memo_request_duration_seconds",
                      "Writes: from handing them to the store to their answer.", counters.requestDuration)
        out.histogram("memo_delivery_delay_seconds",
                      "Changes: from the store applying one to its frame queued for a thread's subscribers.",
                      counters.deliveryDelay)

        out.family("memo_tls_handshakes_total", "counter", "TLS handshakes, by result.")
        out.sample("memo_tls_handshakes_total", ["result": "ok"], Double(counters.handshakes[0]))
        out.sample("memo_tls_handshakes_total", ["result": "failed"], Double(counters.handshakes[1]))
        out.family("memo_connection_closes_total", "counter", "Connections closed, by reason.")
        for reason in CloseReason.allCases {
            out.sample("memo_connection_closes_total", ["reason": reason.name], Double(counters.closes[reason.rawValue]))
        }
        let trust = shared.trust.current
        out.family("memo_certificate_expiry_timestamp_seconds", "gauge",
                   "notAfter of the server's and the CA's certificate, Unix seconds.")
        out.sample("memo_certificate_expiry_timestamp_seconds", ["which": "server"], Double(trust.server.notAfter))
        out.sample("memo_certificate_expiry_timestamp_seconds", ["which": "ca"], Double(trust.authority.notAfter))

        ProcessFigures.read().write(into: &out)
        return out.text
    }

    /// Lines of the exposition format.
    struct Writer {
        var text = ""

        mutating func family(_ name: String, _ type: String, _ help: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }

        mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
            text += name
            if !labels.isEmpty {
                text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
            }
            text += " " + Self.format(value) + "\n"
        }

        mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
            sample(name, labels.map { ($0.key, $0.value) }, value)
        }

        mutating func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
            family(name, "histogram", help)
            var cumulative: UInt64 = 0
            for (index, bound) in Histogram.bounds.enumerated() {
                cumulative &+= histogram.buckets[index]
                sample(name + "_bucket", [("le", Self.format(bound))], Double(cumulative))
            }
            sample(name + "_bucket", [("le", "+Inf")], Double(histogram.count))
            sample(name + "_sum", [], histogram.sum)
            sample(name + "_count", [], Double(histogram.count))
        }

        static func format(_ value: Double) -> String {
            if value.isNaN { return "NaN" }
            if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return "\(value)"
        }

        static func escape(_ value: String) -> String {
            value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
    }
}

/// The standard process metrics, from /proc.
struct ProcessFigures {
    var cpuSeconds: Double?
    var residentBytes: Double?
    var openDescriptors: Double?
    var maxDescriptors: Double?
    var startTime: Double?

    static func read() -> ProcessFigures {
        var figures = ProcessFigures()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")") {
            // Fields after the command's closing parenthesis: state is field 3, so index i here is field i + 3.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 19, let user = Double(fields[11]), let system = Double(fields[12]),
               let start = Double(fields[19]), ticks > 0 {
                figures.cpuSeconds = (user + system) / ticks
                if let boot = bootTime() { figures.startTime = boot + start / ticks }
            }
        }
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Double(fields[1]) {
                figures.residentBytes = pages * Double(sysconf(Int32(_SC_PAGESIZE)))
            }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            figures.openDescriptors = Double(entries.count)
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 { figures.maxDescriptors = Double(limit.rlim_cur) }
        return figures
    }

    private static func bootTime() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    func write(into out: inout MetricsExposition.Writer) {
        let families: [(String, String, String, Double?)] = [
            ("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpuSeconds),
            ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", residentBytes),
            ("process_open_fds", "gauge", "Number of open file descriptors.", openDescriptors),
            ("process_max_fds", "gauge", "Maximum number of open file descriptors.", maxDescriptors),
            ("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
             startTime),
        ]
        for (name, type, help, value) in families {
            guard let value else { continue }
            out.family(name, type, help)
            out.sample(name, [], value)
        }
    }
}
