import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoServer
import MemoStore
import MemoTestSupport
import ServerTestSupport
import Testing

/// Time from start to a ready mirror for a 100,000-memo store, from the server and from the cache file.
/// Opt-in (`MEMO_MEASURE=1 swift test --filter ClientMeasure`): it prints numbers rather than checking them.
@Suite("Client: measurements", .enabled(if: ProcessInfo.processInfo.environment["MEMO_MEASURE"] == "1"))
struct ClientMeasureTests {
    @Test func mirrorReadyFromTheServerAndFromTheCache() async throws {
        let count = Int(ProcessInfo.processInfo.environment["MEMO_MEASURE_COUNT"] ?? "") ?? 100_000
        let base: Int64 = 1_795_000_000_000_000
        let memos = (0..<count).map { i in
            Memo(id: UUID(), content: "memo number \(i) with some text to make it typical",
                 insertMicros: base + Int64(i), updateMicros: base + Int64(i), revision: UInt64(i + 1))
        }
        let server = try TestServer(store: MemoryStore(memos: memos))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let cache = directory.path + "/mirror.cache"
        let clock = ContinuousClock()

        // From the server: connect, subscribe, snapshot in chunks, list built.
        var start = clock.now
        let client = try await MemoConnection.connect(server.clientConfiguration())
        let store = try RemoteStore(client: client, cachePath: cache)
        try await store.waitUntilFresh(timeout: .seconds(120))
        let fromServer = clock.now - start
        start = clock.now
        _ = try await client.list()
        let listing = clock.now - start
        #expect(store.memoList().value?.count == count)
        start = clock.now
        try store.saveCache()
        let saving = clock.now - start
        client.close()

        // From the cache: the list is there before the connection is up (stale), then resumes (mode 1).
        start = clock.now
        let second = try MemoConnection.start(server.clientConfiguration())
        let cached = try RemoteStore(client: second, cachePath: cache)
        let fromCache = clock.now - start
        #expect(cached.memoList().value?.count == count)
        try await cached.waitUntilFresh(timeout: .seconds(120))
        let fresh = clock.now - start
        second.close()

        let size = (try? FileManager.default.attributesOfItem(atPath: cache)[.size] as? Int) ?? 0
        print("""
            MEASURE \(count) memos:
              from the server (connect + snapshot + list): \(fromServer)
              a plain list request, for comparison: \(listing)
              saving the cache (\(size) bytes): \(saving)
              from the cache (list shown, stale): \(fromCache)
              from the cache until fresh (resumed, mode 1): \(fresh)
            """)
    }
}
