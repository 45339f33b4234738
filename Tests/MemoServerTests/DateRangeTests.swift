import Foundation
import MemoModel
import MemoNet
import MemoPostgres
import MemoProbe
@testable import MemoSQLite
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Testing

/// Dates a client gives are checked against the documented range (years 1970 to 9999), never move the server's
/// own insert clock, and a file already holding dates out of the range (written by an older server) still serves.
@Suite("Dates: the range, the server's own insert clock, update dates, and files with dates out of range")
struct DateRangeTests {
    static let year2100: Int64 = 4_102_444_800_000_000  // 2100-01-01T00:00:00Z

    static func isInvalidRequest(_ message: Message, mentioning words: [String]) -> Bool {
        guard case .error(let code, let text) = message, code == .invalidRequest else { return false }
        return words.allSatisfy { text.contains($0) }
    }

    /// Asserts that a dateless create is dated about now (within a minute), that is, by the real clock.
    static func expectDatedNow(_ reply: Message, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .memo(let memo) = reply else {
            Issue.record("a dateless create was answered \(reply)", sourceLocation: sourceLocation)
            return
        }
        let now = Date().unixMicros
        #expect(abs(memo.insertMicros - now) < 60_000_000, "dated \(memo.insertMicros), now \(now)",
                sourceLocation: sourceLocation)
        #expect(memo.updateMicros == memo.insertMicros, sourceLocation: sourceLocation)
    }

    /// Issue 24, item 1: a create at insert date 2^63−1 and then any dateless create trapped the server on the
    /// insert clock's `+ 1` (and a SQLite server again after every restart); 2^63−2 one create later.
    @Test func createsAtTheEndOfInt64AreRefusedAndTheServerKeepsServingAlsoAfterARestart() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/memos.sqlite"
        var server = try TestServer(store: try SQLiteStore(path: path))
        var running = true
        defer { if running { server.stop() } }
        var client = try server.connect()
        for date in [Int64.max, Int64.max - 1, MemoDates.latestMicros + 1] {
            let reply = try client.request(.create(id: nil, insertMicros: date, content: "end of time"))
            #expect(Self.isInvalidRequest(reply, mentioning: ["insert date", "\(date)", "9999-12-31T23:59:59.999999Z"]),
                    "\(reply)")
            Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "after \(date)")))
            Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "again \(date)")))
        }
        // The last valid date is taken, and does not move the clock either.
        guard case .memo(let last) = try client.request(
            .create(id: nil, insertMicros: MemoDates.latestMicros, content: "the last date"))
        else {
            Issue.record("the last valid date was refused")
            return
        }
        #expect(last.insertMicros == MemoDates.latestMicros && last.updateMicros == MemoDates.latestMicros)
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "after the last date")))

        // A restart on the same file: the clock starts from the real time, not from the memo dated 9999.
        server.stop()
        running = false
        server = try TestServer(store: try SQLiteStore(path: path))
        running = true
        client = try server.connect()
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "after a restart")))
        #expect(try client.request(.ping(nonce: 7)) == .pong(nonce: 7))
        #expect(try client.request(.get(id: last.id)) == .memo(last))
    }

    @Test(arguments: [
        (Int64?(-1), Int64?.none, "insert date -1 µs (before 1970)"),
        (Int64.min, nil, "insert date \(Int64.min) µs (before 1970)"),
        (nil, Int64.max, "update date \(Int64.max) µs since 1970 (after 9999)"),
        (nil, -1, "update date -1 µs (before 1970)"),
        (year2100, 0, "the update date 1970-01-01T00:00:00Z is before the insert date 2100-01-01T00:00:00Z"),
    ])
    func datesOutOfTheRangeOrOutOfOrderAreRefusedWithTheReasonInWords(
        insert: Int64?, update: Int64?, reason: String
    ) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        let reply = try client.request(.create(id: nil, insertMicros: insert, updateMicros: update, content: "x"))
        #expect(Self.isInvalidRequest(reply, mentioning: [reason]), "\(reply)")
        #expect(server.store.revision == 0)
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "still serving")))
    }

    /// Issue 24, item 2: after an import dated 2100 every later create was dated 2100 plus a microsecond, a create
    /// with only an update date got 203, and an update kept a future update date.
    @Test(arguments: ["memory", "sqlite", "postgres"])
    func aFutureDateAClientGivesMovesNoOtherDateAndAnUpdateIsDatedNow(storeKind: String) throws {
        let folder = try TemporaryDirectory()
        let store: any ServingStore
        switch storeKind {
        case "memory": store = MemoryStore()
        case "sqlite": store = try SQLiteStore(path: folder.path + "/memos.sqlite")
        default:
            guard postgresTestsEnabled else { return }
            store = try PostgresStore(uri: try TestPostgres.shared().makeDatabase())
        }
        let server = try TestServer(store: store)
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let future) = try client.request(
            .create(id: nil, insertMicros: Self.year2100, updateMicros: Self.year2100, content: "from 2100"))
        else {
            Issue.record("the import dated 2100 was refused")
            return
        }
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "now")))
        // Only an update date, a second from now: the insert date is now, so the order holds.
        let soon = Date().unixMicros + 1_000_000
        let reply = try client.request(.create(id: nil, insertMicros: nil, updateMicros: soon, content: "soon"))
        guard case .memo(let dated) = reply else {
            Issue.record("a create with only an update date was answered \(reply)")
            return
        }
        #expect(dated.updateMicros == soon && dated.insertMicros <= soon)

        // An imported memo from the past whose update date is in the future: an update dates it now.
        guard case .memo(let odd) = try client.request(
            .create(id: nil, insertMicros: 1_000_000, updateMicros: Self.year2100, content: "edited in 2100"))
        else {
            Issue.record("the import was refused")
            return
        }
        guard case .memo(let updated) = try client.request(
            .update(id: odd.id, expectedRevision: odd.revision, content: "edited now"))
        else {
            Issue.record("the update was refused")
            return
        }
        #expect(abs(updated.updateMicros - Date().unixMicros) < 60_000_000, "update dated \(updated.updateMicros)")
        // A memo inserted in the future: an update is dated at its insert date, never before it.
        guard case .memo(let futureUpdated) = try client.request(
            .update(id: future.id, expectedRevision: future.revision, content: "still from 2100"))
        else {
            Issue.record("the update of the future memo was refused")
            return
        }
        #expect(futureUpdated.updateMicros == Self.year2100)
        // A delete is answered (and pushed) dated when it happened, in every store.
        guard case .memo(let gone) = try client.request(
            .create(id: nil, insertMicros: 2_000_000, updateMicros: Self.year2100, content: "deleted now"))
        else {
            Issue.record("the import was refused")
            return
        }
        let deleted = try client.request(.delete(id: gone.id, expectedRevision: nil))
        #expect({ if case .memo(let memo) = deleted { abs(memo.updateMicros - Date().unixMicros) < 60_000_000 }
                  else { false } }(), "\(deleted)")
    }

    /// Writes memos and changes into a SQLite file the way an older server could have (before the range was
    /// checked): raw rows in the current schema.
    static func writeOlderFile(path: String, rows: [(id: UUID, insert: Int64, update: Int64, content: String)]) throws {
        try SQLiteStore(path: path).close()  // the schema
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        try database.execute("BEGIN")
        let insert = try database.prepare("""
            INSERT INTO changes (revision, current, kind, id, insert_us, update_us, content)
            VALUES (?, 1, 1, ?, ?, ?, ?)
            """)
        for (index, row) in rows.enumerated() {
            insert.bind(1, Int64(index + 1))
            insert.bind(2, row.id.bytes)
            insert.bind(3, row.insert)
            insert.bind(4, row.update)
            insert.bind(5, row.content)
            try insert.run()
        }
        try database.execute("UPDATE meta SET value = \(rows.count) WHERE key = 'head'; COMMIT")
    }

    /// A file an older server wrote with dates at the ends of Int64 loads; the server serves it, dates new memos
    /// by the real clock, and updates and deletes the old ones.
    @Test func aSQLiteFileHoldingDatesOutOfTheRangeLoadsAndServes() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/memos.sqlite"
        let ids = (0..<3).map { _ in UUID() }
        try Self.writeOlderFile(path: path, rows: [
            (ids[0], Int64.max, Int64.max, "the end of Int64"),
            (ids[1], Int64.max - 1, Int64.max, "one before"),
            (ids[2], Int64.min, Int64.max, "the start of Int64"),
        ])
        let server = try TestServer(store: try SQLiteStore(path: path))
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let top) = try client.request(.get(id: ids[0])) else {
            Issue.record("the memo at Int64.max did not load")
            return
        }
        #expect(top.insertMicros == Int64.max)
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "new")))
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "newer")))
        let updated = try client.request(.update(id: ids[0], expectedRevision: nil, content: "edited"))
        #expect({ if case .memo(let memo) = updated { memo.updateMicros == Int64.max } else { false } }(), "\(updated)")
        let edited = try client.request(.update(id: ids[2], expectedRevision: nil, content: "edited too"))
        #expect({ if case .memo(let memo) = edited { abs(memo.updateMicros - Date().unixMicros) < 60_000_000 }
                  else { false } }(), "\(edited)")
        let deleted = try client.request(.delete(id: ids[1], expectedRevision: nil))
        #expect({ if case .memo = deleted { true } else { false } }(), "\(deleted)")
        let subscription = try client.send(.list)
        let (_, listed) = try client.receive { $0.requestID == subscription }
        guard case .memos(_, _, let memos) = listed else {
            Issue.record("list answered \(listed)")
            return
        }
        #expect(memos.count == 4)
        #expect(memos.first?.id == ids[0])  // newest first: the one dated at the end of Int64
    }

    /// The built `memo-server` on such a file: before the fix it died (SIGILL) at the first dateless create, and
    /// again after every restart.
    @Test func theMemoServerBinaryOnAnOlderFileWithAMemoAtInt64MaxServesDatelessCreates() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/memos.sqlite"
        try Self.writeOlderFile(path: path, rows: [(UUID(), Int64.max, Int64.max, "the end of Int64")])
        let certificates = try TestCertificates()
        let arguments = ["--store", "sqlite:" + path, "--certs", certificates.path, "--listen", "127.0.0.1:0"]
        for run in 1...2 {
            let server = try ServerProcess(arguments: arguments, directory: folder)
            let client = try TestClient(
                address: try SocketAddress(parsing: server.address), identity: certificates.client())
            try client.hello()
            Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "run \(run)")))
            Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "again \(run)")))
            let refused = try client.request(.create(id: nil, insertMicros: Int64.max, content: "refused"))
            #expect(Self.isInvalidRequest(refused, mentioning: ["after 9999"]), "\(refused)")
            #expect(try client.request(.ping(nonce: 1)) == .pong(nonce: 1))
            server.signal(SIGTERM)
            #expect(server.waitForExit() == 0, "\(server.log)")
        }
    }

    /// The same for a PostgreSQL database an older server wrote: a memo at Int64.max, and the insert clock
    /// (`memo_head.last_insert`) pushed there by it, which made every dateless create fail on `last + 1`.
    @Test(.enabled(if: postgresTestsEnabled))
    func aPostgreSQLDatabaseHoldingDatesOutOfTheRangeLoadsAndServes() throws {
        let postgres = try TestPostgres.shared()
        let database = try postgres.makeDatabaseName()
        try PostgresStore(uri: postgres.uri(database)).close()  // the schema
        let id = UUID()
        try postgres.sql("""
            BEGIN;
            INSERT INTO memos VALUES ('\(id.uuidString)', 'end'::bytea, \(Int64.max), \(Int64.max), 1);
            INSERT INTO memo_changes VALUES (1, 1, '\(id.uuidString)', 'end'::bytea, \(Int64.max), \(Int64.max));
            UPDATE memo_head SET revision = 1, last_insert = \(Int64.max);
            COMMIT;
            """, database: database)
        let server = try TestServer(store: try PostgresStore(uri: postgres.uri(database)))
        defer { server.stop() }
        let client = try server.connect()
        guard case .memo(let top) = try client.request(.get(id: id)) else {
            Issue.record("the memo at Int64.max did not load")
            return
        }
        #expect(top.insertMicros == Int64.max)
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "new")))
        Self.expectDatedNow(try client.request(.create(id: nil, insertMicros: nil, content: "newer")))
        let updated = try client.request(.update(id: id, expectedRevision: nil, content: "edited"))
        #expect({ if case .memo(let memo) = updated { memo.updateMicros == Int64.max } else { false } }(), "\(updated)")
        let deleted = try client.request(.delete(id: id, expectedRevision: nil))
        #expect({ if case .memo = deleted { true } else { false } }(), "\(deleted)")
    }
}
