import Foundation
import MemoModel
import MemoProbe
import MemoSQLite
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

@Suite("Batched writes and the table's key")
struct BatchWriteTests {
    /// One submit of several writes: results come back once, in order, each write seeing the ones before it.
    @Test(arguments: ["memory", "sqlite"])
    func aBatchIsAnsweredOnceInOrder(kind: String) async throws {
        let directory = try TemporaryDirectory()
        let store: any ServingStore =
            kind == "memory" ? MemoryStore() : try SQLiteStore(path: directory.path + "/memos.sqlite")
        defer { store.close() }
        let id = UUID()
        let calls = Recorder<[Result<WriteOutcome, MemoError>]>()
        store.submit([
            .create(id: id, content: "one", insertMicros: nil),
            .update(id: UUID(), content: "nobody", expectedRevision: nil),
            .update(id: id, content: "two", expectedRevision: 1),
        ]) { calls.record($0) }
        await calls.wait(for: 1)
        let results = try #require(calls.values.first)
        #expect(results.count == 3)
        #expect(results.map(\.memoContent) == ["one", nil, "two"])
        if case .failure(.notFound) = results[1] {} else { Issue.record("expected notFound, got \(results[1])") }
        #expect(try await store.get(id: id).content == "two")
    }

    /// More writes than one transaction takes: the SQLite writer splits them, the answer still comes once.
    @Test func aBatchLargerThanATransactionIsStillAnsweredOnce() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path + "/memos.sqlite")
        defer { store.close() }
        let count = SQLiteStore.maxBatch + 300
        let calls = Recorder<[Result<WriteOutcome, MemoError>]>()
        store.submit((0..<count).map { .create(id: UUID(), content: "memo \($0)", insertMicros: nil) }) {
            calls.record($0)
        }
        await calls.wait(for: 1)
        let results = try #require(calls.values.first)
        #expect(results.map(\.memoContent) == (0..<count).map { "memo \($0)" })
        #expect(store.revision == UInt64(count))
        #expect(store.transactionCount >= 2)
        #expect(calls.values.count == 1)
    }

    /// Writes pipelined in one packet reach the store as one batch: applied in the order sent, each answered
    /// under its own request id with what it did.
    @Test(arguments: ["memory", "sqlite"])
    func pipelinedWritesAreAppliedInOrderAndEachAnswered(kind: String) throws {
        let directory = try TemporaryDirectory()
        let store: any ServingStore =
            kind == "memory" ? MemoryStore() : try SQLiteStore(path: directory.path + "/memos.sqlite")
        let server = try TestServer(store: store)
        defer { server.stop() }
        let client = try server.connect()
        let id = UUID()
        var bytes = Message.create(id: id, insertMicros: nil, content: "first").frame(requestID: 10)
        bytes += Message.update(id: id, expectedRevision: 1, content: "second").frame(requestID: 11)
        bytes += Message.update(id: UUID(), expectedRevision: nil, content: "nobody").frame(requestID: 12)
        bytes += Message.delete(id: id, expectedRevision: 1).frame(requestID: 13)  // stale: now at revision 2
        try client.sendRaw(bytes)
        var answers: [UInt32: Message] = [:]
        for requestID: UInt32 in 10...13 { answers[requestID] = try client.receive { $0.requestID == requestID }.1 }
        guard case .memo(let created) = answers[10], case .memo(let updated) = answers[11] else {
            Issue.record("expected two memos, got \(answers)")
            return
        }
        #expect(created.content == "first" && created.revision == 1)
        #expect(updated.content == "second" && updated.revision == 2)
        guard case .error(let notFound, _) = answers[12], case .error(let conflict, _) = answers[13] else {
            Issue.record("expected two errors, got \(answers)")
            return
        }
        #expect(notFound == .notFound)
        #expect(conflict == .conflict)
        #expect(try store.memo(id).content == "second")
    }

    @Test func uuidKeysHashBySeedAndSpreadStructuredIDs() {
        let id = UUID()
        #expect(UUIDKey(id)._rawHashValue(seed: 1) == UUIDKey(id)._rawHashValue(seed: 1))
        #expect(UUIDKey(id)._rawHashValue(seed: 1) != UUIDKey(id)._rawHashValue(seed: 2))
        #expect(UUIDKey(id) == UUIDKey(UUID(uuid: id.uuid)))
        // Ids that differ in one byte only (as a client could choose them) must not share buckets.
        for position in [0, 7, 8, 15] {
            var buckets = Set<Int>()
            for value in 0..<1024 {
                var bytes = id.uuid
                withUnsafeMutableBytes(of: &bytes) {
                    $0[position] = UInt8(value & 0xFF)
                    $0[(position + 1) % 16] = UInt8(value >> 8)
                }
                buckets.insert(UUIDKey(UUID(uuid: bytes))._rawHashValue(seed: 42) & 1023)
            }
            // Random hashing fills about 1 - 1/e = 63% of 1024 buckets with 1024 keys.
            #expect(buckets.count > 550, "byte \(position): \(buckets.count) buckets")
        }
        var table: [UUIDKey: Int] = [:]
        let ids = (0..<10_000).map { _ in UUID() }
        for (index, id) in ids.enumerated() { table[UUIDKey(id)] = index }
        #expect(ids.enumerated().allSatisfy { table[UUIDKey($0.element)] == $0.offset })
    }
}

extension Result where Success == WriteOutcome, Failure == MemoError {
    /// The content of the memo a successful write produced; nil for a failure.
    var memoContent: String? {
        if case .success(let outcome) = self { return outcome.memo.content }
        return nil
    }
}
