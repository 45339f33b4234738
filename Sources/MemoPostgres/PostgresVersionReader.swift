import Dispatch
import Foundation
import MemoDiagnostics
import MemoModel

/// Reads the shared database's kept versions and trash on a connection and a thread of its own, so that a
/// `history` or `trash` request waits neither for the writer nor blocks the caller; every server reads the same
/// tables, so every server answers the same. The connection is made on first use and again after it breaks.
// @unchecked Sendable: `connection` is used only on `queue`, one call at a time.
final class PostgresVersionReader: @unchecked Sendable {
    private let queue = DispatchQueue(label: "memo-pg-versions")
    private let link: PostgresLink
    private var connection: PGConnection?
    /// The versions kept per memo: with 0 none is shown, also one another server (with a K above 0) kept since
    /// this server dropped them (`memo_drop_versions`, when it opened and with each purge pass).
    private let keep: Int

    init(uri: String, keep: Int, timeoutMillis: Int, log: @escaping @Sendable (LogRecord) -> Void) {
        self.keep = keep
        link = PostgresLink(uri: uri, role: "reader", timeoutMillis: timeoutMillis, log: log)
    }

    /// Versions and trash entries only up to the durable claim (`PostgresSQL.durable`), as every server's feed
    /// reads changes: the writers commit without waiting for the flush, and a row before its claim could still be
    /// taken back by a crash of PostgreSQL.
    static let durableBound = "revision <= (SELECT coalesce(max(d.revision), 0) FROM memo_durable d)"
    /// A memo's versions older than `$2`, at most `$3`, among its newest `$4` (this server's K, above 0): another
    /// server may keep more, and a server started with a smaller K than before finds up to the old K of a memo until
    /// that memo is next written (SQLite keeps only the newest K from its open on); `log` shows at most K, as the
    /// restore finds at most K (`PostgresSQL.keptByThisServer`).
    static let historySQL = """
        SELECT revision, vkind, update_micros, author_name, author_serial, content FROM memo_changes
        WHERE id = $1::uuid AND vkind BETWEEN 1 AND 3 AND revision < $2::bigint AND \(durableBound)
            AND revision >= coalesce((SELECT revision FROM memo_changes
                WHERE id = $1::uuid AND vkind BETWEEN 1 AND 3 AND \(durableBound)
                ORDER BY revision DESC OFFSET ($4::bigint - 1) LIMIT 1), 0)
        ORDER BY revision DESC LIMIT $3::bigint
        """
    static let knownSQL = """
        SELECT EXISTS (SELECT 1 FROM memos WHERE id = $1::uuid)
            OR EXISTS (SELECT 1 FROM memo_changes WHERE id = $1::uuid AND vkind = 4)
        """
    static let trashSQL = """
        SELECT revision, id, insert_micros, update_micros, author_name, author_serial, content FROM memo_changes
        WHERE vkind = 4 AND revision < $1::bigint AND \(durableBound) ORDER BY revision DESC LIMIT $2::bigint
        """

    func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void
    ) {
        queue.async { [self] in
            let found = run { connection throws(PGError) -> VersionPage? in
                let bound = String(Int64(clamping: before ?? UInt64(Int64.max)))
                var versions: [MemoVersion] = []
                // With K = 0 no version is read: a known memo's page is empty.
                let rows = keep == 0 ? nil : try connection.execute(
                    Self.historySQL, [.text(id.uuidString), .text(bound), .text(String(limit + 1)), .text(String(keep))])
                if let rows {
                    for row in 0..<rows.rowCount {
                        guard let kind = VersionKind(rawValue: UInt8(truncatingIfNeeded: rows.integer(row, 1))) else {
                            continue
                        }
                        versions.append(MemoVersion(
                            id: id, revision: UInt64(rows.integer(row, 0)), kind: kind, micros: rows.integer(row, 2),
                            author: Author(name: rows.text(row, 3), serial: rows.text(row, 4)),
                            content: rows.text(row, 5)))
                    }
                }
                if versions.isEmpty, before == nil {
                    let known = try connection.execute(Self.knownSQL, [.text(id.uuidString)])
                    // Nothing known of the id: not live, not in the trash.
                    if known.integer(0, 0) == 0 { return nil }
                }
                return VersionPage(versions: Array(versions.prefix(limit)), more: versions.count > limit)
            }
            completion(found.flatMap { page in page.map { .success($0) } ?? .failure(.notFound(id)) })
        }
    }

    func trash(limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void) {
        queue.async { [self] in
            completion(run { connection throws(PGError) -> TrashPage in
                let bound = String(Int64(clamping: before ?? UInt64(Int64.max)))
                let rows = try connection.execute(Self.trashSQL, [.text(bound), .text(String(limit + 1))])
                var entries: [TrashEntry] = []
                for row in 0..<rows.rowCount {
                    let revision = UInt64(rows.integer(row, 0))
                    let author = Author(name: rows.text(row, 4), serial: rows.text(row, 5))
                    let memo = Memo(
                        id: rows.uuid(row, 1), content: rows.text(row, 6), insertMicros: rows.integer(row, 2),
                        updateMicros: rows.integer(row, 3), revision: revision, author: author)
                    entries.append(TrashEntry(
                        memo: memo, revision: revision, deletedMicros: memo.updateMicros, deletedBy: author))
                }
                return TrashPage(entries: Array(entries.prefix(limit)), more: entries.count > limit)
            })
        }
    }

    /// Runs `body` on the reader's connection (made when missing); a broken connection is dropped, to be made
    /// again by the next call.
    private func run<T>(_ body: (PGConnection) throws(PGError) -> T) -> Result<T, MemoError> {
        if connection == nil { connection = link.connect(listening: false) }
        guard let current = connection else {
            return .failure(.storage("PostgreSQL is unavailable: \(link.lastError)"))
        }
        do throws(PGError) {
            return .success(try body(current))
        } catch {
            if error.connectionLost {
                link.lost(error)
                connection = nil
            }
            return .failure(.storage("PostgreSQL could not read the versions: \(error.message)"))
        }
    }

    func close() {
        queue.sync { connection = nil }
    }
}
