import Dispatch
import Foundation
import MemoModel
/// The parameters of one `memo_write` call and the results it gives back, one row per write in order.
enum WriteCall {
    private enum Status: Int64 {
        case changed = 0
        case existing = 1
        case notFound = 2
        case conflict = 3
        /// A create whose update date is before its insert date.
        case invalidDates = 4
        /// Not a write's row: another server's change that came before this call's (they lead the result).
        case earlier = 5
        /// A restore of a live memo that names no revision.
        case restoreNeedsRevision = 6
        /// A restore of a version that is not kept (never one of this memo's, or purged); its revision follows.
        case versionNotKept = 7
        /// A restore of a memo that is neither live nor in the trash.
        case notInTrash = 8
    }

    /// Kinds, ids, insert dates, update dates, expected revisions and the time as text arrays, then the authors,
    /// restore targets, merge flags and the version policy, then the contents as one bytea array in binary.
    /// - Parameter after: the last revision the caller applied; the other servers' changes after it come back.
    static func parameters(
        _ ops: [WriteOp], _ nowMicros: Int64, after: UInt64, policy: VersionPolicy
    ) -> [PGParameter] {
        var kinds: [String] = []
        var ids: [String] = []
        var inserts: [String] = []
        var updates: [String] = []
        var expected: [String] = []
        var contents: [String] = []
        var names: [String] = []
        var serials: [String] = []
        var targets: [String] = []
        var merges: [String] = []
        for op in ops {
            names.append(quoted(op.author.name))
            serials.append(quoted(op.author.serial))
            var target = "NULL"
            var merge = "f"
            switch op {
            case .create(let id, let content, let insert, let update, _):
                kinds.append("1")
                ids.append(id.lowercasedString)
                inserts.append(insert.map(String.init) ?? "NULL")
                updates.append(update.map(String.init) ?? "NULL")
                expected.append("NULL")
                contents.append(content)
            case .update(let id, let content, let revision, let merging, _):
                merge = merging ? "t" : "f"
                kinds.append("2")
                ids.append(id.lowercasedString)
                inserts.append("NULL")
                updates.append("NULL")
                expected.append(revision.map(Self.bigint) ?? "NULL")
                contents.append(content)
            case .delete(let id, let revision, _):
                kinds.append("3")
                ids.append(id.lowercasedString)
                inserts.append("NULL")
                updates.append("NULL")
                expected.append(revision.map(Self.bigint) ?? "NULL")
                contents.append("")
            case .restore(let id, let wanted, let revision, _):
                kinds.append("4")
                ids.append(id.lowercasedString)
                inserts.append("NULL")
                updates.append("NULL")
                expected.append(revision.map(Self.bigint) ?? "NULL")
                target = wanted.map(Self.bigint) ?? "NULL"
                contents.append("")
            }
            targets.append(target)
            merges.append(merge)
        }
        func array(_ items: [String]) -> PGParameter { .text("{" + items.joined(separator: ",") + "}") }
        return [array(kinds), array(ids), array(inserts), array(updates), array(expected), .text(String(nowMicros)),
                .text(String(after)), array(names), array(serials), array(targets), array(merges),
                .text(String(policy.keep)), .text(policy.trashDays > 0 ? "t" : "f"), .binary(byteaArray(contents))]
    }

    /// A one-dimensional bytea array in PostgreSQL's binary format (`array_send`): dimensions, no null flag, the
    /// element type (bytea, oid 17), the length and lower bound, then each element's length and bytes; all
    /// integers 4 bytes, big-endian. An empty array has no dimension. Each element is a content's UTF-8, written
    /// straight from the string.
    static func byteaArray(_ elements: [String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + $1.utf8.count })
        func append(_ value: Int32) {
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }
        append(elements.isEmpty ? 0 : 1)
        append(0)
        append(17)
        if !elements.isEmpty {
            append(Int32(elements.count))
            append(1)
        }
        for element in elements {
            append(Int32(element.utf8.count))
            out.append(contentsOf: element.utf8)
        }
        return out
    }

    /// An element of a text array literal: quoted, with backslashes and quotes escaped (a certificate's name may
    /// hold any character, and an empty one must not read as NULL).
    private static func quoted(_ text: String) -> String {
        // Most names hold neither: one concatenation, not a scalar at a time (which was 2.6% of a server's samples
        // under 50 clients' creates over PostgreSQL).
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        for character in text.unicodeScalars {
            if character == "\\" || character == "\"" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(character)
        }
        return out + "\""
    }

    /// A revision no memo can be at stands for one beyond bigint, so that it is a conflict, not an SQL error
    /// failing the whole batch.
    private static func bigint(_ revision: UInt64) -> String {
        revision > UInt64(Int64.max) ? "-1" : String(revision)
    }

    /// One `memo_write` call for `ops`, the batch's first or a merge's: it commits without waiting for its flush
    /// (`PostgresSQL.write`), so nothing it returns may be answered or handed on before a claim covers it
    /// (`PostgresClaimer`).
    /// - Parameter after: the newest revision the caller applied or handed to the feed.
    /// - Returns: the other servers' changes after `after` that came first, and one result per write.
    /// - Throws: the call's error (`PostgresStore.failure` tells what it means for the writes).
    static func write(
        _ ops: [WriteOp], on connection: PGConnection, nowMicros: Int64, after: UInt64, policy: VersionPolicy,
        deadline: DispatchTime
    ) throws(PGError) -> (earlier: [Change], results: [Result<WriteOutcome, MemoError>]) {
        let rows = try connection.execute(
            PostgresSQL.write, parameters(ops, nowMicros, after: after, policy: policy), prepared: true,
            deadline: deadline)
        let earlier = earlierChanges(rows)
        return (earlier, ops.enumerated().map { row, op in result(of: op, rows, earlier.count + row) })
    }

    /// The other servers' changes that lead the result, in revision order; the writes' rows follow them.
    static func earlierChanges(_ rows: PGResult) -> [Change] {
        var changes: [Change] = []
        for row in 0..<rows.rowCount where rows.integer(row, 0) == Status.earlier.rawValue {
            guard let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: rows.integer(row, 1))) else { break }
            changes.append(Change(
                revision: UInt64(rows.integer(row, 6)), kind: kind, memo: memo(rows, row),
                restored: rows.integer(row, 9) != 0))
        }
        return changes
    }

    private static func memo(_ rows: PGResult, _ row: Int) -> Memo {
        Memo(id: rows.uuid(row, 2), content: rows.text(row, 3), insertMicros: rows.integer(row, 4),
             updateMicros: rows.integer(row, 5), revision: UInt64(rows.integer(row, 6)),
             author: Author(name: rows.text(row, 7), serial: rows.text(row, 8)))
    }

    /// The outcome of `op` from row `row` of the call's result.
    static func result(of op: WriteOp, _ rows: PGResult, _ row: Int) -> Result<WriteOutcome, MemoError> {
        guard row < rows.rowCount, let status = Status(rawValue: rows.integer(row, 0)) else {
            return .failure(.storage("memo_write answered \(rows.rowCount) rows, not one per write"))
        }
        let id = op.id
        let expected: UInt64?
        switch op {
        case .create: expected = nil
        case .update(_, _, let revision, _, _), .delete(_, let revision, _), .restore(_, _, let revision, _):
            expected = revision
        }
        switch status {
        case .notFound:
            return .failure(.notFound(id))
        case .restoreNeedsRevision:
            return .failure(.invalidArgument(
                "memo \(id.lowercasedString) is not deleted: name the revision to restore"))
        case .versionNotKept:
            return .failure(.versionNotFound(id: id, reason: WritePlanner.notKept(UInt64(rows.integer(row, 6)))))
        case .notInTrash:
            return .failure(.versionNotFound(id: id, reason: WritePlanner.notInTrash))
        case .conflict:
            return .failure(.conflict(id: id, expected: expected, actual: UInt64(rows.integer(row, 6))))
        case .invalidDates:
            // The planner's own words, so that every store refuses alike.
            return .failure(
                MemoDates.outOfOrder(insertMicros: rows.integer(row, 4), updateMicros: rows.integer(row, 5)))
        case .earlier:
            return .failure(.storage("memo_write answered another server's change in place of a write"))
        case .changed, .existing:
            let memo = memo(rows, row)
            guard status == .changed else { return .success(.existing(memo)) }
            guard let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: rows.integer(row, 1))) else {
                return .failure(.storage("memo_write answered an unknown change kind"))
            }
            return .success(.change(Change(
                revision: memo.revision, kind: kind, memo: memo, restored: rows.integer(row, 9) != 0)))
        }
    }
}
