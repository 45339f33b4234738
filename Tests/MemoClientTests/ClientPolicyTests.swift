import Foundation
import MemoClient
import MemoModel
import MemoTestSupport
import Testing

@Suite("Client: backoff and cache")
struct ClientPolicyTests {
    @Test func backoffGrowsIsCappedAndJittered() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2))
        #expect(policy.delay(afterFailures: 0) == .zero)
        #expect(policy.delay(afterFailures: 1, random: 1) == .milliseconds(100))
        #expect(policy.delay(afterFailures: 3, random: 1) == .milliseconds(400))
        #expect(policy.delay(afterFailures: 30, random: 1) == .seconds(2))
        #expect(policy.delay(afterFailures: 30, random: 0.5) == .seconds(1))
        for failures in 1...10 {
            let delay = policy.delay(afterFailures: failures)
            #expect(delay > .zero && delay <= .seconds(2))
        }
    }

    @Test func theCacheFileRoundTripsAndRefusesDamage() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/nested/mirror.cache"
        #expect(try MirrorCache.load(from: path) == nil)
        var memos: [Memo] = []
        for i in 0..<100 {
            let content = "메모 \(i)\n\u{0}"
            let insert = Int64(1000 - i)
            memos.append(Memo(id: UUID(), content: content, insertMicros: insert, updateMicros: insert + 5000,
                              revision: UInt64(i + 1)))
        }
        try MirrorCache.save(revision: 150, memos: memos, to: path)
        let loaded = try #require(try MirrorCache.load(from: path))
        #expect(loaded.revision == 150)
        #expect(loaded.memos == memos)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count - 3).write(to: URL(fileURLWithPath: path))
        #expect(throws: MemoError.self) { try MirrorCache.load(from: path) }
        try Data("not a cache".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: MemoError.self) { try MirrorCache.load(from: path) }
    }

    @Test func theCacheLivesUnderXDGCacheHomeOrHome() {
        #expect(MirrorCache.defaultPath(server: "127.0.0.1:7420", environment: ["XDG_CACHE_HOME": "/x/cache"])
            == "/x/cache/memo/mirror-127.0.0.1_7420.cache")
        #expect(MirrorCache.defaultPath(server: "[::1]:7420", environment: ["HOME": "/home/me"])
            == "/home/me/.cache/memo/mirror-___1__7420.cache")
        #expect(MirrorCache.defaultPath(server: "h:1", environment: ["XDG_CACHE_HOME": "relative", "HOME": "/h"])
            == "/h/.cache/memo/mirror-h_1.cache")
    }
}
