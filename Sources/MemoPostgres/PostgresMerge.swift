import Dispatch
import Foundation
import MemoModel

/// PostgreSQL's part in merging stale updates (`WriteOp.update` with `merge`): `memo_write` checks revisions in
/// the database but cannot merge lines, so the writer does it after the batch, as the other stores' planner does
/// inside theirs: for each update the batch answered with a conflict and that asked to be merged, it reads the
/// base (the kept version at the update's expected revision) with the memo's current content and revision, merges
/// with `StaleUpdate.merged`, and sends the merged text as an update guarded by that current revision. Another
/// server's change between the read and the write makes it conflict again; it is merged again, up to `rounds`
/// times. An update whose base is not kept, or whose lines overlap, stays the conflict it was.
enum PostgresMerge {
    /// Rounds of read, merge and write before a stale update that keeps meeting new changes is left a conflict.
    static let rounds = 3

    /// The base version's content and the memo as it is: one row, or none when either is gone. The base counts
    /// only when it is one of the memo's newest `$3` versions, `$3` being this server's `--versions` (as a
    /// restore's version, `PostgresSQL.keptByThisServer`): another server over the same database may keep more,
    /// and with K = 0 this server's last drop may be up to a purge interval old. A merge then finds the base that
    /// SQLite with the same K would (with K = 0, none: the stale update stays a conflict).
    static let readBase = """
        SELECT c.content, m.content, m.revision, m.insert_micros, m.update_micros, m.author_name, m.author_serial
        FROM memos m JOIN memo_changes c ON c.id = m.id CROSS JOIN (SELECT $3::integer AS keep) k
        WHERE m.id = $1::uuid AND c.revision = $2::bigint AND c.vkind BETWEEN 1 AND 3
            AND \(PostgresSQL.keptByThisServer)
        """

    /// What merging did to a batch: its results (merged updates answered with their change), and the changes
    /// the extra `memo_write` calls made or returned, for the feed.
    struct Outcome {
        var changes: [Change] = []
        var earlier: [Change] = []
        /// The connection broke (or a call failed) meanwhile: the caller drops the connection.
        var failure: PGError?
    }

    /// Merges the stale updates among `ops` (the batch's writes that were sent, in order) whose result is a
    /// conflict, updating `results` in place.
    /// - Parameters:
    ///   - after: the newest revision the writer handed to the feed, before these calls.
    ///   - deadline: the batch's; below `minimumSendMillis` left, a merged write is not sent (the conflict stays).
    ///   - timeoutMillis: the storage timeout, for the message of a write cut off by the deadline.
    static func merge(
        _ ops: [WriteOp], _ results: inout [Result<WriteOutcome, MemoError>], on connection: PGConnection,
        nowMicros: Int64, after: UInt64, policy: VersionPolicy, deadline: DispatchTime, minimumSendMillis: Int,
        timeoutMillis: Int
    ) -> Outcome {
        var outcome = Outcome()
        var handedOver = after
        var pending = ops.indices.filter { index in
            guard case .failure(.conflict) = results[index], case .update(_, _, _?, true, _) = ops[index] else {
                return false
            }
            return true
        }
        var round = 0
        while !pending.isEmpty && round < rounds {
            round += 1
            var retries: [(index: Int, op: WriteOp)] = []
            var writing = false
            do throws(PGError) {
                for index in pending {
                    guard case .update(let id, let content, let expected?, _, let author) = ops[index] else { continue }
                    let rows = try connection.execute(
                        readBase, [.text(id.uuidString), .text(String(expected)), .text(String(policy.keep))],
                        deadline: deadline)
                    guard rows.rowCount == 1,
                        let merged = StaleUpdate.merged(
                            base: rows.text(0, 0), current: rows.text(0, 1), update: content)
                    else { continue }
                    let current = UInt64(rows.integer(0, 2))
                    if merged.hasSameBytes(as: rows.text(0, 1)) {
                        // Already the merge (a resent update that was done, or the same edit on both sides).
                        results[index] = .success(.existing(Memo(
                            id: id, content: rows.text(0, 1), insertMicros: rows.integer(0, 3),
                            updateMicros: rows.integer(0, 4), revision: current,
                            author: Author(name: rows.text(0, 5), serial: rows.text(0, 6)))))
                        continue
                    }
                    retries.append(
                        (index, .update(id: id, content: merged, expectedRevision: current, merge: false, author: author)))
                }
                let left = Int((deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1_000_000)
                guard !retries.isEmpty, deadline > .now(), left >= minimumSendMillis else { return outcome }
                writing = true
                // As the batch itself: committed without waiting for the flush; the batch's claim, after these
                // calls, covers them (`PostgresClaimer`): nothing is answered or handed on before it.
                let (earlier, written) = try WriteCall.write(
                    retries.map(\.op), on: connection, nowMicros: nowMicros, after: handedOver, policy: policy,
                    deadline: deadline)
                outcome.earlier += earlier
                pending = []
                for (retry, result) in zip(retries, written) {
                    switch result {
                    case .success(.change(let change)):
                        outcome.changes.append(change)
                        results[retry.index] = result
                    case .failure(.conflict(let id, _, let actual)):
                        // Changed again since the read: the caller's conflict names its own expected revision.
                        guard case .update(_, _, let expected, _, _) = ops[retry.index] else { continue }
                        results[retry.index] = .failure(.conflict(id: id, expected: expected, actual: actual))
                        pending.append(retry.index)
                    default:
                        results[retry.index] = result
                    }
                }
                handedOver = max(handedOver, outcome.changes.last?.revision ?? 0, earlier.last?.revision ?? 0)
            } catch {
                // A read failed: the writes stay the conflicts they were. A merged write failed: it may or may
                // not have been committed (or was refused), as any write.
                if writing {
                    let failure = PostgresStore.failure(error, timeoutMillis: timeoutMillis)
                    for retry in retries { results[retry.index] = .failure(failure) }
                }
                outcome.failure = error
                return outcome
            }
        }
        return outcome
    }
}
