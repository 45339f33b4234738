import Foundation
import MemoModel
@testable import MemoPostgres
import MemoProbe
import MemoStore
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Synchronization
import Testing

/// The notification a writer sends after its claim carries the newest changes when they fit (`FeedPayload`): the
/// other servers apply them without reading the changes table; what does not fit, or does not come next, is read.
@Suite("Another server's changes come in the notification's payload, or else through a read",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresFeedPayloadTests {
    /// Two servers whose feeds never read on their own (the periodic read is an hour away), once server 1's first
    /// read at start is done; its reads so far.
    private static func servers() throws -> (SharedDatabaseServers, UInt64) {
        let servers = try SharedDatabaseServers(count: 2, recheckMillis: 3_600_000)
        let stats = servers.stores[1].stats
        try #require(pollUntil(seconds: 30) { stats.feedReads.load(ordering: .relaxed) >= 1 })
        return (servers, stats.feedReads.load(ordering: .relaxed))
    }

    private static func create(_ client: TestClient, _ content: String) throws -> Memo {
        guard case .memo(let memo) = try client.request(.create(id: nil, insertMicros: nil, content: content)) else {
            throw MemoError.storage("the create was refused")
        }
        return memo
    }

    @Test func changesCarriedInThePayloadArriveGapFreeWithTheirBytesAndNoRead() throws {
        let (servers, readsBefore) = try Self.servers()
        defer { servers.stop() }
        let here = try RecordingSubscriber(servers: servers, index: 0)
        defer { here.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        // Protocol version 3, which has restores.
        let writer = try TestClient(
            address: servers.address(0), identity: servers.certificates.client(), timeout: .seconds(10))
        try writer.hello(version: 3)
        // Every field the payload's format must carry: lengths in bytes (multi-byte text, an emoji), the
        // format's own separators in a content, an update, a delete and a restore from the trash.
        let memo = try Self.create(writer, "쪽지, 1:2\n3 🙂 é")
        try #require(there.wait(until: memo.revision, seconds: 20))
        _ = try writer.request(.update(id: memo.id, expectedRevision: memo.revision, content: "두 번째:\n,"))
        _ = try writer.request(.delete(id: memo.id, expectedRevision: nil))
        _ = try writer.request(.restore(id: memo.id, revision: nil, expectedRevision: nil))
        let last = try Self.create(writer, "")
        try #require(here.wait(until: last.revision, seconds: 20))
        try #require(there.wait(until: last.revision, seconds: 20))

        #expect(here.changes.map(\.revision) == Array(1...last.revision))
        #expect(there.changes == here.changes)
        #expect(there.changes.map { Array($0.memo.content.utf8) } == here.changes.map { Array($0.memo.content.utf8) })
        #expect(there.changes.map(\.kind) == [.created, .updated, .deleted, .created, .created])
        // What the subscriptions (protocol version 1) do not show: the authors and the restore's mark, as the
        // writer's server holds them.
        let written = try servers.stores[0].storeState.changes(after: 0).changes
        let carried = try servers.stores[1].storeState.changes(after: 0).changes
        #expect(carried == written)
        #expect(carried.map(\.restored) == [false, false, false, true, false])
        #expect(carried.allSatisfy { !$0.memo.author.isEmpty })
        let stats = servers.stores[1].stats
        #expect(stats.feedReads.load(ordering: .relaxed) == readsBefore, "server 1 read the changes table")
        #expect(stats.carriedChanges.load(ordering: .relaxed) == last.revision)
    }

    @Test func aChangeTooLargeForThePayloadOrHoldingANulByteArrivesThroughTheRead() throws {
        let (servers, readsBefore) = try Self.servers()
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let writer = try servers.connect(0)
        // Over the payload's budget (PostgreSQL refuses 8,000 bytes), and a content a text payload cannot hold.
        let large = String(repeating: "가", count: 3_000)
        let contents = [large, "a\u{0}b"]
        var made: [Memo] = []
        for content in contents {
            made.append(try Self.create(writer, content))
            try #require(there.wait(until: made.last!.revision, seconds: 20), "\(made.count)")
        }
        #expect(there.changes.map(\.memo) == made)
        #expect(there.changes.map { Array($0.memo.content.utf8) } == contents.map { Array($0.utf8) })
        let stats = servers.stores[1].stats
        #expect(stats.carriedChanges.load(ordering: .relaxed) == 0)
        #expect(stats.feedReads.load(ordering: .relaxed) >= readsBefore + 2)
    }

    @Test func aPayloadPastAHoleIsMendedByTheReadAndNeverApplied() throws {
        let (servers, _) = try Self.servers()
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let writer = try servers.connect(0)
        let first = try Self.create(writer, "one")
        try #require(there.wait(until: first.revision, seconds: 20))
        let stats = servers.stores[1].stats
        let reads = stats.feedReads.load(ordering: .relaxed)
        // A well-formed payload for a revision past the next one, which no writer made: it waits past the hole,
        // the head it announces makes the feed read, and the read (which finds nothing new) drops it.
        let id = UUID()
        let hex = id.uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let forged = "\(first.revision + 2),\(first.revision + 2)\n10\(hex),1,1,0:0:6:forged"
        _ = try servers.cluster.sql("NOTIFY \(PostgresSQL.channel), '\(forged)'", database: servers.database)
        #expect(pollUntil(seconds: 20) { stats.feedReads.load(ordering: .relaxed) > reads })
        // The real changes at those revisions then come in their own payloads.
        let second = try Self.create(writer, "two")
        try #require(there.wait(until: second.revision, seconds: 20))
        let third = try Self.create(writer, "three")
        try #require(there.wait(until: third.revision, seconds: 20))
        #expect(there.changes.map(\.memo) == [first, second, third])
        #expect(there.changes.map(\.revision) == [1, 2, 3])
        #expect(!there.changes.contains { $0.memo.id == id })
    }
}

@Suite("A notification's payload is read exactly or not at all")
struct FeedPayloadFormatTests {
    @Test func aPayloadOfTheHeadAloneCarriesNoChanges() throws {
        let announced = try #require(FeedPayload.parse(Array("42".utf8)))
        #expect(announced.head == 42)
        #expect(announced.changes.isEmpty)
    }

    @Test func aPayloadCutShortOrWithBytesLeftOverIsNotOne() {
        let whole = "2,2\n21000102030405060708090a0b0c0d0e0f,-5,7,1:a2:b 3:x\ny"
        #expect(FeedPayload.parse(Array(whole.utf8))?.changes.first?.memo.content == "x\ny")
        #expect(FeedPayload.parse(Array(whole.utf8))?.changes.first?.memo.insertMicros == -5)
        #expect(FeedPayload.parse(Array(whole.utf8))?.changes.first?.restored == true)
        #expect(FeedPayload.parse(Array(whole.dropLast().utf8)) == nil)
        #expect(FeedPayload.parse(Array((whole + "z").utf8)) == nil)
        // Two changes announced (first 1, head 2), one given.
        #expect(FeedPayload.parse(Array(whole.replacingOccurrences(of: "2,2", with: "2,1").utf8)) == nil)
        #expect(FeedPayload.parse(Array("x".utf8)) == nil)
        #expect(FeedPayload.parse([]) == nil)
    }
}
