import Foundation
import MemoModel
@testable import MemoSQLite
import MemoStore
import MemoTestSupport
import Testing

/// A file as schema version 1 made it: every memo in `memos`, every change (with its content again) in `changes`.
/// The DDL is version 1's, word for word.
struct Version1File {
    struct Row {
        var revision: UInt64
        var kind: ChangeKind
        var memo: Memo
    }

    static let ddl = """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS memos (
            id BLOB NOT NULL, content TEXT NOT NULL,
            insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL, revision INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS changes (
            revision INTEGER PRIMARY KEY, kind INTEGER NOT NULL, id BLOB NOT NULL, content TEXT NOT NULL,
            insert_us INTEGER NOT NULL, update_us INTEGER NOT NULL);
        INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 1), ('head', 0);
        """

    /// Writes `memos` and `changes` (the history left after trimming) and the recorded head.
    static func write(path: String, memos: [Memo], changes: [Row], head: UInt64) throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        try database.execute(ddl)
        try database.execute("BEGIN")
        let insertMemo = try database.prepare(
            "INSERT INTO memos (id, content, insert_us, update_us, revision) VALUES (?, ?, ?, ?, ?)")
        for memo in memos {
            insertMemo.bind(1, memo.id.bytes)
            insertMemo.bind(2, memo.content)
            insertMemo.bind(3, memo.insertMicros)
            insertMemo.bind(4, memo.updateMicros)
            insertMemo.bind(5, Int64(memo.revision))
            try insertMemo.run()
        }
        let insertChange = try database.prepare(
            "INSERT INTO changes (revision, kind, id, content, insert_us, update_us) VALUES (?, ?, ?, ?, ?, ?)")
        for row in changes {
            insertChange.bind(1, Int64(row.revision))
            insertChange.bind(2, Int64(row.kind.rawValue))
            insertChange.bind(3, row.memo.id.bytes)
            insertChange.bind(4, row.memo.content)
            insertChange.bind(5, row.memo.insertMicros)
            insertChange.bind(6, row.memo.updateMicros)
            try insertChange.run()
        }
        try database.execute("UPDATE meta SET value = \(head) WHERE key = 'head'; COMMIT")
    }

    /// The file's schema version and table names, read without changing it.
    static func describe(path: String) throws -> (version: Int64, tables: [String]) {
        let database = try SQLiteDatabase(path: path, readOnly: true)
        defer { database.close() }
        let version = try database.prepare("SELECT value FROM meta WHERE key = 'schema'")
        let stored = try version.step() ? version.int64(0) : -1
        version.reset()
        let names = try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var tables: [String] = []
        while try names.step() { tables.append(names.string(0)) }
        names.reset()
        return (stored, tables)
    }
}

@Suite("SQLite schema: version 1 upgraded in place, newer versions refused")
struct SQLiteMigrationTests {
    /// Revisions 1...6: A made (1, trimmed from the history), B made (2) and edited (3), C made (4) and deleted (5),
    /// D imported (6). The history holds 2...6.
    struct Scenario {
        let a = Memo(
            id: UUID(), content: "A, whose change was trimmed", insertMicros: 10, updateMicros: 10, revision: 1)
        let b0 = Memo(id: UUID(), content: "B before", insertMicros: 20, updateMicros: 20, revision: 2)
        var b1: Memo { Memo(id: b0.id, content: "B 편집 후", insertMicros: 20, updateMicros: 30, revision: 3) }
        let c = Memo(id: UUID(), content: "C, deleted", insertMicros: 40, updateMicros: 40, revision: 4)
        var cDeleted: Memo { Memo(id: c.id, content: c.content, insertMicros: 40, updateMicros: 40, revision: 5) }
        let d = Memo(id: UUID(), content: "D imported", insertMicros: 5, updateMicros: 7, revision: 6)

        var history: [Change] {
            [
                Change(revision: 2, kind: .created, memo: b0), Change(revision: 3, kind: .updated, memo: b1),
                Change(revision: 4, kind: .created, memo: c), Change(revision: 5, kind: .deleted, memo: cDeleted),
                Change(revision: 6, kind: .created, memo: d),
            ]
        }

        func write(path: String, memos: [Memo]? = nil) throws {
            try Version1File.write(
                path: path, memos: memos ?? [a, b1, d],
                changes: history.map { Version1File.Row(revision: $0.revision, kind: $0.kind, memo: $0.memo) }, head: 1)
        }
    }

    @Test func aVersion1FileIsUpgradedWithEveryMemoAndTheSameHistory() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let scenario = Scenario()
        try scenario.write(path: path)

        var store = try SQLiteStore(path: path, historyCapacity: 5)
        #expect(try Version1File.describe(path: path) == (SQLiteSchema.version, ["changes", "meta"]))
        #expect(store.revision == 6)
        #expect(store.memoList().value == [scenario.b1, scenario.a, scenario.d])
        let resumed = Recorder<WatchEvent>()
        store.watch(from: .after(1)) { resumed.record($0) }.cancel()
        #expect(resumed.values == [.resumed(head: 6)] + scenario.history.map { .change($0) })
        let gone = Recorder<WatchEvent>()
        store.watch(from: .after(0)) { gone.record($0) }.cancel()
        #expect(gone.values == [.historyGone(requested: 0, oldestAvailable: 1)])

        // The carried memo, the edited one and a new one can all be changed, and it all survives a reopen.
        let aEdited = try await store.update(id: scenario.a.id, content: "A edited", expectedRevision: 1)
        let bDeleted = try await store.delete(id: scenario.b0.id, expectedRevision: 3)
        let e = try await store.createMemo(content: "E")
        store.close()
        store = try SQLiteStore(path: path, historyCapacity: 5)
        defer { store.close() }
        #expect(store.memoList().value == [e, aEdited, scenario.d])
        let later = Recorder<WatchEvent>()
        store.watch(from: .after(4)) { later.record($0) }.cancel()
        #expect(later.values == [
            .resumed(head: 9), .change(scenario.history[3]), .change(scenario.history[4]),
            .change(Change(revision: 7, kind: .updated, memo: aEdited)),
            .change(Change(revision: 8, kind: .deleted, memo: bDeleted)),
            .change(Change(revision: 9, kind: .created, memo: e)),
        ])
    }

    @Test func anUpgradeThatFailsPartWayLeavesVersion1AsItWas() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let scenario = Scenario()
        // B's row names revision 3 but disagrees with change 3: the upgrade stops after copying the changes.
        var damaged = scenario.b1
        damaged.content = "not what change 3 made"
        try scenario.write(path: path, memos: [scenario.a, damaged, scenario.d])
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        #expect {
            _ = try SQLiteStore(path: path, historyCapacity: 5)
        } throws: { error in
            guard case MemoError.storage(let message) = error else { return false }
            return message.contains("left at version 1")
        }
        #expect(try Version1File.describe(path: path) == (1, ["changes", "memos", "meta"]))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aNewerSchemaIsRefusedWithItsVersionAndNothingChanges() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let store = try SQLiteStore(path: path)
        store.close()
        let database = try SQLiteDatabase(path: path)
        try database.execute("UPDATE meta SET value = 5 WHERE key = 'schema'")
        database.close()

        #expect {
            _ = try SQLiteStore(path: path)
        } throws: { error in
            guard case MemoError.storage(let message) = error else { return false }
            return message.contains("schema version 5, made by a newer memo-server")
        }
        #expect(try Version1File.describe(path: path) == (5, ["changes", "meta"]))
    }

    @Test func aCreateStoresItsContentOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        let marker = "marker " + (0..<4).map { _ in UUID().uuidString }.joined()
        let store = try SQLiteStore(path: path)
        _ = try await store.createMemo(content: marker)
        store.close()
        // The log copied into the file and cut to nothing: every stored byte is in the file.
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        database.close()
        let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int
        #expect((log ?? 0) == 0)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(occurrences(of: Data(marker.utf8), in: file) == 1)
    }

    @Test func editsOfMemosOlderThanTheHistoryKeepTheFileBounded() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        var store = try SQLiteStore(path: path, historyCapacity: 10)
        var memos: [Memo] = []
        for i in 0..<5 { memos.append(try await store.createMemo(content: "memo \(i)")) }
        // Three transactions of 1,000 edits each (trims come every 1,024 writes).
        for round in 0..<3 {
            let done = Recorder<[Result<WriteOutcome, MemoError>]>()
            let edits = (0..<1000).map {
                WriteOp.update(id: memos[$0 % 3].id, content: "edit \(round) \($0)", expectedRevision: nil)
            }
            store.submit(edits) { done.record($0) }
            await done.wait(for: 1)
        }
        _ = try await store.delete(memo: memos[4])
        memos.removeLast()
        for i in memos.indices { memos[i] = try await store.get(id: memos[i].id) }
        store.close()
        // The rows left: one per memo, the history, and what was written since the last trim (one per 1,024 writes).
        #expect(try rowCount(path: path) <= 4 + 10 + 1024)
        store = try SQLiteStore(path: path, historyCapacity: 10)
        defer { store.close() }
        #expect(Set(store.memoList().value ?? []) == Set(memos))
        let events = Recorder<WatchEvent>()
        store.watch(from: .after(store.revision - 10)) { events.record($0) }.cancel()
        #expect(events.values.count == 11)
    }

    private func rowCount(path: String) throws -> Int64 {
        let database = try SQLiteDatabase(path: path, readOnly: true)
        defer { database.close() }
        let count = try database.prepare("SELECT COUNT(*) FROM changes")
        defer { count.reset() }
        return try count.step() ? count.int64(0) : -1
    }

    private func occurrences(of needle: Data, in haystack: Data) -> Int {
        var found = 0
        var start = haystack.startIndex
        while let range = haystack.range(of: needle, in: start..<haystack.endIndex) {
            found += 1
            start = range.upperBound
        }
        return found
    }
}
