import Foundation
import MemoModel
import MemoStore
import Synchronization

/// What the writer and the feed of a PostgreSQL store record for `status`: each figure written by one thread,
/// read by any (atomics, no lock on the write path).
final class PostgresStats: Sendable {
    let batches = Atomic<UInt64>(0)
    let writes = Atomic<UInt64>(0)
    let commitNanos = Atomic<UInt64>(0)
    let lastBatchSize = Atomic<Int>(0)
    let lastCommitNanos = Atomic<UInt64>(0)
    /// The newest revision the feed saw announced or read (the database's head as far as this server knows).
    let databaseHead = Atomic<UInt64>(0)
    /// CLOCK_MONOTONIC nanoseconds of the feed's last progress: a read to the table's end, or a change applied.
    let feedProgressNanos = Atomic<UInt64>(0)
    /// The feed's reads of the changes table (one per page), and the other servers' changes it applied from
    /// notifications' payloads without one (`FeedPayload`).
    let feedReads = Atomic<UInt64>(0)
    let carriedChanges = Atomic<UInt64>(0)
    /// This process's tag in its notifications' payloads (`FeedPayload`): its feed knows its own by it.
    let origin = UInt64.random(in: 1...999_999_999_999_999_999)

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    func batchCommitted(size: Int, nanos: UInt64) {
        batches.add(1, ordering: .relaxed)
        writes.add(UInt64(size), ordering: .relaxed)
        commitNanos.add(nanos, ordering: .relaxed)
        lastBatchSize.store(size, ordering: .relaxed)
        lastCommitNanos.store(nanos, ordering: .relaxed)
    }

    func saw(head: UInt64) {
        _ = databaseHead.max(head, ordering: .relaxed)
    }

    func feedProgressed() {
        feedProgressNanos.store(Self.now(), ordering: .relaxed)
    }
}

extension PostgresStore {
    /// Kind `postgresql`, the URI without its password, and how this server follows the database.
    public var storeStatus: StoreStatus {
        let applied = storeState.revision
        let batches = stats.batches.load(ordering: .relaxed)
        let progress = stats.feedProgressNanos.load(ordering: .relaxed)
        let now = PostgresStats.now()
        let commitNanos = Double(stats.commitNanos.load(ordering: .relaxed))
        let meanCommit: Double? = batches == 0 ? nil : commitNanos / Double(batches) / 1e9
        let lastCommit: Double? = batches == 0 ? nil : Double(stats.lastCommitNanos.load(ordering: .relaxed)) / 1e9
        let sinceProgress: Double? = progress == 0 ? nil : Double(now &- min(now, progress)) / 1e9
        let shared = SharedStoreStatus(
            appliedRevision: applied,
            databaseHead: max(applied, stats.databaseHead.load(ordering: .relaxed)),
            secondsSinceFeedProgress: sinceProgress,
            writerBatches: batches,
            writerWrites: stats.writes.load(ordering: .relaxed),
            meanCommitSeconds: meanCommit,
            lastBatchSize: batches == 0 ? nil : stats.lastBatchSize.load(ordering: .relaxed),
            lastCommitSeconds: lastCommit)
        return StoreStatus(
            kind: "postgresql", location: Self.withoutPassword(uri), memoCount: storeState.memoCount,
            oldestRetained: storeState.oldestResumable, shared: shared)
    }

    /// `uri` with any password taken out: the `user:password@` of a URI, and a `password=` parameter (of a URI's
    /// query or a `key=value` connection string), so that `status` never shows it.
    static func withoutPassword(_ uri: String) -> String {
        var text = uri
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
               let colon = rest[..<at].firstIndex(of: ":") {
                text.replaceSubrange(colon..<at, with: ":***")
            }
        }
        // password=... up to the next & (URI query) or whitespace (key=value form), quoted values included.
        var result = ""
        var index = text.startIndex
        while let found = text[index...].range(of: "password=", options: .caseInsensitive) {
            let boundary = found.lowerBound == text.startIndex
                || [" ", "?", "&", "\t"].contains(text[text.index(before: found.lowerBound)])
            result += text[index..<found.upperBound]
            index = found.upperBound
            guard boundary else { continue }
            var end = index
            if end < text.endIndex, text[end] == "'" {
                end = text.index(after: end)
                while end < text.endIndex, text[end] != "'" {
                    if text[end] == "\\" { end = text.index(after: end) }
                    if end < text.endIndex { end = text.index(after: end) }
                }
                if end < text.endIndex { end = text.index(after: end) }
            } else {
                while end < text.endIndex, !["&", " ", "\t"].contains(text[end]) { end = text.index(after: end) }
            }
            result += "***"
            index = end
        }
        result += text[index...]
        return result
    }
}
