import Foundation
import MemoModel
import MemoNet
import MemoTLS
import MemoWire
import Synchronization

/// The loops' counters and gauges summed at one moment, with the rates over the last minute.
struct ServerSnapshot: Sendable {
    var counters = LoopCounters()
    var gauges = LoopGauges()
    /// Nil until a loop has sampled for half a second.
    var writesPerSecond: Double?
    var deliveriesPerSecond: Double?

    mutating func add(_ context: LoopContext) {
        counters = counters + context.counters
        gauges = gauges + context.gauges()
        if let rates = context.rates.rates(context.counters, at: monotonicNanos()) {
            writesPerSecond = (writesPerSecond ?? 0) + rates.writes
            deliveriesPerSecond = (deliveriesPerSecond ?? 0) + rates.deliveries
        }
    }
}

/// Sums the loops' parts as they come in, and hands the whole on when the last one has.
private final class SnapshotGathering: Sendable {
    private let state: Mutex<(remaining: Int, snapshot: ServerSnapshot)>
    private let completion: @Sendable (ServerSnapshot) -> Void

    init(parts: Int, completion: @escaping @Sendable (ServerSnapshot) -> Void) {
        state = Mutex((parts, ServerSnapshot()))
        self.completion = completion
    }

    /// Adds one loop's part (on that loop).
    func add(_ context: LoopContext) {
        let whole = state.withLock { state -> ServerSnapshot? in
            state.snapshot.add(context)
            state.remaining -= 1
            return state.remaining == 0 ? state.snapshot : nil
        }
        if let whole { completion(whole) }
    }
}

extension ServerShared {
    /// Whether the server serves now: not while it shuts down, and not while its store says it cannot.
    var readiness: StoreReadiness {
        if shuttingDown.load(ordering: .relaxed) { return .notReady("shutting down") }
        return store.readiness
    }

    /// Reads every loop's counters on that loop (through its task queue: no loop waits for another) and calls
    /// `completion`, on the last loop to answer, with their sum.
    func gatherSnapshot(_ completion: @escaping @Sendable (ServerSnapshot) -> Void) {
        let contexts = loopContexts.withLock { $0 }
        guard !contexts.isEmpty else { return completion(ServerSnapshot()) }
        let gathering = SnapshotGathering(parts: contexts.count, completion: completion)
        for context in contexts {
            context.eventLoop.execute { gathering.add(context.value) }
        }
    }

    /// The status report, gathered as `gatherSnapshot` does.
    func gatherStatus(_ completion: @escaping @Sendable (StatusReport) -> Void) {
        gatherSnapshot { snapshot in completion(self.statusReport(snapshot)) }
    }

    /// The answer to `status` (PROTOCOL.md lists the names).
    func statusReport(_ snapshot: ServerSnapshot) -> StatusReport {
        let readiness = self.readiness
        let store = self.store.storeStatus
        let trust = self.trust.current
        let gauges = snapshot.gauges
        var fields: [StatusField] = [
            StatusField("server.name", .text(serverName)),
            StatusField("server.version", .text(MemoRelease.version)),
            StatusField("protocol.version", .integer(Int64(WireProtocol.version))),
            StatusField("uptime.seconds", .number(Double(monotonicNanos() &- startedAt) / 1e9)),
            StatusField("store.kind", .text(store.kind)),
            StatusField("store.location", .text(store.location)),
            StatusField("revision.head", .integer(self.store.revision)),
            StatusField("revision.oldest_retained", .integer(store.oldestRetained)),
            StatusField("memos.count", .integer(store.memoCount)),
            StatusField("connections.read_write", .integer(gauges.readWrite)),
            StatusField("connections.read_only", .integer(gauges.readOnly)),
            StatusField("connections.handshaking", .integer(gauges.handshaking)),
            StatusField("subscribers", .integer(gauges.subscriptions)),
            StatusField("queued.bytes", .integer(gauges.queuedBytes)),
            StatusField("writes.per_second", .number(snapshot.writesPerSecond)),
            StatusField("deliveries.per_second", .number(snapshot.deliveriesPerSecond)),
            StatusField("tls.records", .text(trust.context.configuration.recordLayer.name)),
            StatusField("certificate.server.expires", .integer(trust.server.notAfter)),
            StatusField("certificate.ca.expires", .integer(trust.authority.notAfter)),
        ]
        let shared = store.shared
        fields += [
            StatusField("postgres.applied_revision", .integer(shared?.appliedRevision)),
            StatusField("postgres.database_head", .integer(shared?.databaseHead)),
            StatusField("postgres.feed_progress_age.seconds", .number(shared?.secondsSinceFeedProgress)),
            StatusField("postgres.writer.batches", .integer(shared?.writerBatches)),
            StatusField("postgres.writer.mean_batch_size", .number(shared.flatMap { shared in
                shared.writerBatches == 0 ? nil : Double(shared.writerWrites) / Double(shared.writerBatches)
            })),
            StatusField("postgres.writer.last_batch_size", .integer(shared?.lastBatchSize)),
            StatusField("postgres.writer.mean_commit.seconds", .number(shared?.meanCommitSeconds)),
            StatusField("postgres.writer.last_commit.seconds", .number(shared?.lastCommitSeconds)),
        ]
        switch readiness {
        case .ready: return StatusReport(ready: true, fields: fields)
        case .notReady(let reason): return StatusReport(ready: false, reason: reason, fields: fields)
        }
    }
}
