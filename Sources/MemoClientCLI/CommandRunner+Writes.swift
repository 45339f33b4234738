import Foundation
import MemoClient
import MemoModel
/// `add`, `edit` and `rm`: each write is retried by `WriteRetry` while its outcome is unknown, as the same
/// request by id, and what a retry meets is read for what it says about the first try.
extension CommandRunner {
    /// A create with an id chosen here: a retry finds the memo the first try made (unchanged: success).
    /// - Parameter firstTry: the create already sent behind hello (`MemoConnection.connect(creating:)`), whose
    ///   answer is the first try's.
    func add(
        _ content: String, id given: UUID? = nil, _ client: MemoConnection, _ retry: WriteRetry,
        firstTry: MemoConnection.CreateBehindHello? = nil
    ) async throws -> Memo {
        let id = given ?? UUID()
        var pending = firstTry
        return try await retry.run { _, timeout in
            if let first = pending {
                pending = nil
                return try await first.memo()
            }
            return try await client.create(content: content, id: id, insertMicros: nil, timeout: timeout)
        }
    }

    /// An update that always carries the revision it expects, so that a retry never applies it twice: with
    /// `--if-revision` that one; without, the memo's current revision, read first (and read again when another
    /// writer moved it in between: without `--if-revision` the last writer wins, as before). After an unknown
    /// try, a memo that holds our bytes is our first try's success.
    func edit(
        _ id: UUID, found: Memo?, to content: String, ifRevision: UInt64?, merge: Bool = false,
        _ client: MemoConnection, _ retry: WriteRetry
    ) async throws -> Memo {
        var current = found
        return try await retry.run { afterUnknown, _ in
            while true {
                if ifRevision == nil, current == nil || afterUnknown {
                    current = try await client.get(id: id, timeout: retry.timeLeft)
                }
                if afterUnknown, let memo = current, memo.content.hasSameBytes(as: content) { return memo }
                do {
                    return try await client.update(
                        id: id, content: content, expectedRevision: ifRevision ?? current?.revision, merge: merge,
                        timeout: retry.timeLeft)
                } catch MemoError.conflict(let conflictID, let expected, let actual) {
                    let latest = try await client.get(id: id, timeout: retry.timeLeft)
                    if afterUnknown, latest.content.hasSameBytes(as: content) { return latest }
                    guard ifRevision == nil, retry.timeLeft > WriteRetry.leastTry else {
                        throw MemoError.conflict(id: conflictID, expected: expected, actual: actual)
                    }
                    current = latest
                }
            }
        }
    }

    /// A delete by id (with `--if-revision`, only at that revision). After an unknown try, not-found means the
    /// first try did it, and the memo as it was before is the answer.
    func remove(
        _ id: UUID, known: Memo?, ifRevision: UInt64?, _ client: MemoConnection, _ retry: WriteRetry
    ) async throws -> Memo {
        try await retry.run { afterUnknown, timeout in
            do {
                return try await client.delete(id: id, expectedRevision: ifRevision, known: known, timeout: timeout)
            } catch MemoError.notFound(let missing) where afterUnknown {
                guard let known else { throw MemoError.notFound(missing) }
                return known
            }
        }
    }
}
