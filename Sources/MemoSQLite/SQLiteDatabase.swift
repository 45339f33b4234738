internal import CSQLite
import Foundation
import MemoModel
/// One SQLite connection. It is used by one thread at a time: the store opens it, then hands it to its writer
/// thread for good.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    /// The log's size, in pages, that starts a checkpoint (1 MiB with 4 KiB pages).
    static let checkpointPages = 256

    /// The size, in bytes, the log is cut back to when it has grown past it (by a large batch). It is a quarter
    /// above the checkpoint size: the log's ordinary peak, at the checkpoint size plus the batch that crossed it,
    /// stays below it, so the log is reused in place. A limit at the checkpoint size itself cut the log back after
    /// every checkpoint, and each regrowth allocated blocks and rewrote the file's inode: about one more device
    /// write per checkpoint (2.34 instead of 2.23 block requests per commit in 100,000 durable creates).
    static let logSizeLimit = checkpointPages * 4096 * 5 / 4

    /// Opens (creating when missing) the database at `path` in WAL mode with `synchronous=FULL`; read-only, it
    /// opens an existing file as it is, for checks that must not change it.
    /// - Throws: `MemoError.storage` with SQLite's message.
    init(path: String, readOnly: Bool = false) throws(MemoError) {
        self.path = path
        var db: OpaquePointer?
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let flags = access | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw .storage("cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // A writer waits for a reader (e.g. the sqlite3 shell) instead of failing at once.
        sqlite3_busy_timeout(db, 5_000)
        if readOnly { return }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=FULL")
        // The log gives its space back only when a checkpoint completes, and a checkpoint needs room in the
        // database file. With SQLite's default (a checkpoint at 1,000 pages, no size limit) a 7 MiB disk filled
        // with a 4 MB log and stayed full after 1.5 MiB was freed: the log held the room its checkpoint needed
        // (DiskFullTests). Checkpointing at 1 MiB, and cutting the log back to 1.25 MiB after a large batch, bounds it.
        try execute("PRAGMA wal_autocheckpoint=\(Self.checkpointPages)")
        try execute("PRAGMA journal_size_limit=\(Self.logSizeLimit)")
        try execute("PRAGMA foreign_keys=OFF")
    }

    deinit {
        close()
    }

    /// Closes the connection; later calls fail.
    func close() {
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs SQL that returns no rows.
    func execute(_ sql: String) throws(MemoError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error \(rc)"
            sqlite3_free(message)
            throw error(rc, text)
        }
    }

    func prepare(_ sql: String) throws(MemoError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, lastMessage) }
        return SQLiteStatement(stmt, database: self)
    }

    /// How many rows the last INSERT, UPDATE or DELETE changed.
    var changedRows: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    var lastMessage: String {
        handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database closed"
    }

    /// Maps an SQLite result code to the store's error: a full disk is told apart so that clients can see it.
    func error(_ rc: Int32, _ message: String) -> MemoError {
        switch rc & 0xff {
        case SQLITE_FULL: return .storageFull("\(path): \(message)")
        default: return .storage("\(path): \(message)")
        }
    }
}

/// A prepared statement, reset after every use.
final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(_ stmt: OpaquePointer, database: SQLiteDatabase) {
        self.stmt = stmt
        self.database = database
    }

    deinit {
        sqlite3_finalize(stmt)
    }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(stmt, index, value)
    }

    func bind(_ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, !utf8.isEmpty else {
                _ = CSQLite_bind_text(stmt, index, "", 0)
                return
            }
            base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { chars in
                _ = CSQLite_bind_text(stmt, index, chars, Int32(utf8.count))
            }
        }
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            _ = CSQLite_bind_blob(stmt, index, raw.baseAddress, Int32(raw.count))
        }
    }

    /// Steps once. - Returns: true when a row is ready, false when done.
    func step() throws(MemoError) -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = database.lastMessage
            sqlite3_reset(stmt)
            throw database.error(rc, message)
        }
    }

    /// Runs a statement that returns no rows, then resets it.
    func run() throws(MemoError) {
        defer { reset() }
        while try step() {}
    }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func string(_ column: Int32) -> String { String(decoding: text(column), as: UTF8.self) }

    /// Two text columns, an author's name and serial, as the author `authors` shares among the rows that name it.
    func author(_ name: Int32, _ serial: Int32, sharing authors: inout AuthorInterner) -> Author {
        authors.decoding(name: text(name), serial: text(serial))
    }

    /// A text column's bytes, valid until the statement steps again; empty for NULL.
    private func text(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let text = sqlite3_column_text(stmt, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(stmt, column)))
    }

    /// The column's 16 bytes as a UUID, without an intermediate array (a million of them at start); nil when the
    /// column is not 16 bytes.
    func uuid(_ column: Int32) -> UUID? {
        guard let blob = sqlite3_column_blob(stmt, column), sqlite3_column_bytes(stmt, column) == 16 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: blob, count: 16)) }
        return UUID(uuid: value)
    }

    func bytes(_ column: Int32) -> [UInt8] {
        guard let blob = sqlite3_column_blob(stmt, column) else { return [] }
        let count = Int(sqlite3_column_bytes(stmt, column))
        return Array(UnsafeRawBufferPointer(start: blob, count: count))
    }
}
