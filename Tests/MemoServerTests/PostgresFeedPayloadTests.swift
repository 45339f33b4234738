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

/// The notification a claimer sends after its claim carries that server's changes when they fit (`FeedPayload`):
/// the other servers apply them without reading the changes table, reassembled in revision order across servers;
/// what does not fit, or leaves a gap no payload fills, is read.
@Suite("Another server's changes come in its notification's payload, or else through a read",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresFeedPayloadTests {
    /// Servers whose feeds never read on their own (the periodic read is an hour away) and wait `gapWaitMillis`
    /// for a gap's payload, once the last server's first read at start is done; that server's reads so far.
    private static func servers(count: Int = 2, gapWaitMillis: Int = 60_000) throws -> (SharedDatabaseServers, UInt64) {
        let servers = try SharedDatabaseServers(count: count, recheckMillis: 3_600_000, gapWaitMillis: gapWaitMillis)
        let stats = servers.stores[count - 1].stats
        try #require(pollUntil(seconds: 30) { stats.feedReads.load(ordering: .relaxed) >= 1 })
        return (servers, stats.feedReads.load(ordering: .relaxed))
    }

    private static func create(_ client: TestClient, _ content: String) throws -> Memo {
        guard case .memo(let memo) = try client.request(.create(id: nil, insertMicros: nil, content: content)) else {
            throw MemoError.storage("the create was refused")
        }
        return memo
    }

    /// Commits and claims durable creates written straight into the tables, as a server would, but sends no
    /// notification; returns them as a feed reads them.
    private static func writeSilently(_ servers: SharedDatabaseServers, _ contents: [String]) throws -> [Change] {
        let head = try servers.head()
        var changes: [Change] = []
        var rows: [String] = []
        for (offset, content) in contents.enumerated() {
            let revision = head + UInt64(offset) + 1
            let memo = Memo(
                id: UUID(), content: content, insertMicros: 1_000 + Int64(offset), updateMicros: 1_000 + Int64(offset),
                revision: revision, author: Author(name: "eve", serial: "0E"))
            changes.append(Change(revision: revision, kind: .created, memo: memo))
            let hex = content.utf8.map { String(format: "%02x", $0) }.joined()
            rows.append("(\(revision), 1, '\(memo.id.uuidString)', '\\x\(hex)'::bytea, \(memo.insertMicros), "
                + "\(memo.updateMicros), 'eve', '0E', 1)")
        }
        let last = head + UInt64(contents.count)
        _ = try servers.cluster.sql("""
            BEGIN;
            UPDATE memo_head SET revision = \(last) WHERE one;
            INSERT INTO memo_changes (revision, kind, id, content, insert_micros, update_micros, author_name,
                author_serial, vkind) VALUES \(rows.joined(separator: ", "));
            COMMIT;
            INSERT INTO memo_durable VALUES (1000, \(last)) ON CONFLICT (slot) DO UPDATE SET revision = \(last);
            """, database: servers.database)
        return changes
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
        // Every field the payload must carry: lengths in bytes (multi-byte text, an emoji), a NUL byte and the
        // payload's own separators in a content, an update, a delete and a restore from the trash.
        let memo = try Self.create(writer, "쪽지, 1:2\n3 🙂 é\u{0}")
        try #require(there.wait(until: memo.revision, seconds: 20))
        _ = try writer.request(.update(id: memo.id, expectedRevision: memo.revision, content: "두 번째:\n,"))
        _ = try writer.request(.delete(id: memo.id, expectedRevision: nil))
        _ = try writer.request(.restore(id: memo.id, revision: nil, expectedRevision: nil))
        let last = try Self.create(writer, "끝")
        try #require(here.wait(until: last.revision, seconds: 20))
        try #require(there.wait(until: last.revision, seconds: 20))

        #expect(here.changes.map(\.revision) == Array(1...last.revision))
        #expect(there.changes == here.changes)
        #expect(there.changes.map { Array($0.memo.content.utf8) } == here.changes.map { Array($0.memo.content.utf8) })
        #expect(there.changes.map(\.kind) == [.created, .updated, .deleted, .created, .created])
        // What the subscriptions (protocol version 1) do not show: the authors and the restore's mark, as the
        // writer's server holds them and as the table does.
        let written = try servers.stores[0].storeState.changes(after: 0).changes
        let carried = try servers.stores[1].storeState.changes(after: 0).changes
        #expect(carried == written)
        let table = try servers.changesTable()
        #expect(carried.map(tableRow) == table)
        #expect(carried.map(\.restored) == [false, false, false, true, false])
        #expect(carried.allSatisfy { !$0.memo.author.isEmpty })
        let stats = servers.stores[1].stats
        #expect(stats.feedReads.load(ordering: .relaxed) == readsBefore, "server 1 read the changes table")
        #expect(stats.carriedChanges.load(ordering: .relaxed) == last.revision)
    }

    @Test func aChangeTooLargeForThePayloadArrivesThroughAReadAtOnce() throws {
        // A gap would wait a minute for a payload: only the head-alone notification's read brings it in time.
        let (servers, readsBefore) = try Self.servers()
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let writer = try servers.connect(0)
        // Over the payload's budget (PostgreSQL refuses 8,000 bytes), then one that fits again.
        let contents = [String(repeating: "가", count: 2_000), "small"]
        var made: [Memo] = []
        for content in contents {
            made.append(try Self.create(writer, content))
            try #require(there.wait(until: made.last!.revision, seconds: 20), "\(made.count)")
        }
        #expect(there.changes.map(\.memo) == made)
        #expect(there.changes.map { Array($0.memo.content.utf8) } == contents.map { Array($0.utf8) })
        let stats = servers.stores[1].stats
        #expect(stats.feedReads.load(ordering: .relaxed) >= readsBefore + 1)
        #expect(stats.carriedChanges.load(ordering: .relaxed) == 1)
    }

    @Test func aGapNoPayloadFillsIsReadOnceItsWaitEnds() throws {
        let (servers, _) = try Self.servers(gapWaitMillis: 100)
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let writer = try servers.connect(0)
        let first = try Self.create(writer, "one")
        try #require(there.wait(until: first.revision, seconds: 20))
        let stats = servers.stores[1].stats
        let reads = stats.feedReads.load(ordering: .relaxed)
        // A change whose notification never comes, then one whose payload announces a head past it.
        let silent = try Self.writeSilently(servers, ["silent"])
        let third = try Self.create(writer, "three")
        try #require(there.wait(until: third.revision, seconds: 20))
        #expect(there.changes.map(\.revision) == [1, 2, 3])
        #expect(there.changes.map(\.memo) == [first, silent[0].memo, third])
        #expect(stats.feedReads.load(ordering: .relaxed) > reads)
    }

    @Test func aForgedChangePastAGapIsDroppedByTheReadAndNeverApplied() throws {
        let (servers, _) = try Self.servers(gapWaitMillis: 100)
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let writer = try servers.connect(0)
        let first = try Self.create(writer, "one")
        try #require(there.wait(until: first.revision, seconds: 20))
        let stats = servers.stores[1].stats
        let reads = stats.feedReads.load(ordering: .relaxed)
        // A well-formed payload for a revision past the next one, which no writer made: it waits past the gap,
        // the read at the end of the gap's wait finds nothing new, and drops it.
        let forged = Change(revision: first.revision + 2, kind: .created, memo: Memo(
            id: UUID(), content: "forged", insertMicros: 1, updateMicros: 1, revision: first.revision + 2,
            author: .none))
        let payload = "\(forged.revision)\(FeedPayload.suffix(origin: 9, changes: [forged]))"
        _ = try servers.cluster.sql("NOTIFY \(PostgresSQL.channel), '\(payload)'", database: servers.database)
        #expect(pollUntil(seconds: 20) { stats.feedReads.load(ordering: .relaxed) > reads })
        // The real changes at those revisions then come in their own payloads.
        let second = try Self.create(writer, "two")
        try #require(there.wait(until: second.revision, seconds: 20))
        let third = try Self.create(writer, "three")
        try #require(there.wait(until: third.revision, seconds: 20))
        #expect(there.changes.map(\.memo) == [first, second, third])
        #expect(!there.changes.contains { $0.memo.id == forged.memo.id })
    }

    @Test func payloadsFromTwoServersArrivingOutOfOrderAreReassembledWithoutARead() throws {
        let (servers, readsBefore) = try Self.servers()
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 1)
        defer { there.stop() }
        let changes = try Self.writeSilently(servers, ["from a", "from b"])
        // Two other servers' notifications, each carrying its own change, the later revision's first (their claims
        // ended in that order).
        let head = changes[1].revision
        let notifies = [(7, [changes[1]]), (8, [changes[0]])].map { origin, carried in
            "NOTIFY \(PostgresSQL.channel), '\(head)\(FeedPayload.suffix(origin: UInt64(origin), changes: carried))';"
        }
        let stats = servers.stores[1].stats
        _ = try servers.cluster.sql(notifies[0], database: servers.database)
        // The first is taken on its own (its head is seen) before the second is sent.
        try #require(pollUntil(seconds: 20) { stats.databaseHead.load(ordering: .relaxed) >= head })
        #expect(servers.stores[1].storeState.revision == head - 2)
        _ = try servers.cluster.sql(notifies[1], database: servers.database)
        try #require(there.wait(until: head, seconds: 20))
        #expect(there.changes.map(\.memo) == changes.map(\.memo))
        #expect(try servers.stores[1].storeState.changes(after: 0).changes == changes)
        #expect(stats.feedReads.load(ordering: .relaxed) == readsBefore, "server 1 read the changes table")
        #expect(stats.carriedChanges.load(ordering: .relaxed) == 2)
    }

    @Test func twoServersWritingAtOnceReachAThirdInOrderWithoutARead() throws {
        let (servers, readsBefore) = try Self.servers(count: 3)
        defer { servers.stop() }
        let there = try RecordingSubscriber(servers: servers, index: 2)
        defer { there.stop() }
        let clients = [try servers.connect(0), try servers.connect(1)]
        var last: UInt64 = 0
        for round in 0..<5 {
            let sent = try clients.map { client in
                try (0..<10).map { try client.send(.create(id: nil, insertMicros: nil, content: "\(round) \($0)")) }
            }
            for (client, ids) in zip(clients, sent) {
                for id in ids {
                    guard case .memo(let memo) = try client.receive({ $0.requestID == id }).1 else {
                        Issue.record("a create was refused")
                        return
                    }
                    last = max(last, memo.revision)
                }
            }
        }
        try #require(there.wait(until: last, seconds: 20))
        #expect(there.changes.map(\.revision) == Array(1...last))
        #expect(there.changes.map(tableRow) == (try servers.changesTable()))
        let stats = servers.stores[2].stats
        #expect(stats.feedReads.load(ordering: .relaxed) == readsBefore, "server 2 read the changes table")
        #expect(stats.carriedChanges.load(ordering: .relaxed) == last)
    }
}

@Suite("A notification's payload is read exactly or not at all")
struct FeedPayloadFormatTests {
    private static let change = Change(
        revision: 5, kind: .deleted,
        memo: Memo(
            id: UUID(), content: "x,\n\u{0}🙂", insertMicros: -5, updateMicros: 7, revision: 5,
            author: Author(name: "a,b", serial: "0F")),
        restored: true)

    @Test func changesMakeTheRoundTripWithEveryField() throws {
        let next = Change(revision: 9, kind: .created, memo: Memo(
            id: UUID(), content: "", insertMicros: 1, updateMicros: 1, revision: 9, author: .none))
        let payload = Array(("9" + FeedPayload.suffix(origin: 42, changes: [Self.change, next])).utf8)
        let announced = try #require(FeedPayload.parse(payload))
        #expect(announced == FeedPayload.Announcement(head: 9, origin: 42, changes: [Self.change, next]))
        #expect(FeedPayload.head(payload) == 9)
        #expect(FeedPayload.origin(payload) == 42)
        #expect(FeedPayload.parse(Array("9,42,".utf8)) == FeedPayload.Announcement(head: 9, origin: 42, changes: []))
    }

    @Test func changesTooLargeLeaveTheHeadAndOriginAlone() throws {
        var large = Self.change
        large.memo.content = String(repeating: "x", count: FeedPayload.maxEncodedBytes)
        let suffix = FeedPayload.suffix(origin: 42, changes: [large])
        #expect(suffix == ",42")
        #expect(FeedPayload.parse(Array("5\(suffix)".utf8)) == FeedPayload.Announcement(head: 5, origin: 42, changes: nil))
        // The largest that fits stays under PostgreSQL's 8,000 bytes, with the longest head and origin.
        large.memo.content = String(repeating: "x", count: FeedPayload.maxEncodedBytes - FeedPayload.fixedBytes - 5)
        let fitting = FeedPayload.suffix(origin: 999_999_999_999_999_999, changes: [large])
        #expect(fitting.count > 7_000)
        #expect(("9223372036854775807" + fitting).utf8.count < 8_000)
    }

    @Test func aPayloadCutShortPastItsHeadOrWithBytesLeftOverIsNotOne() {
        let whole = "5" + FeedPayload.suffix(origin: 42, changes: [Self.change])
        let encoded = FeedPayload.encode([Self.change])!
        #expect(FeedPayload.parse(Array(whole.utf8)) != nil)
        let cut = "5,42," + Data(encoded.dropLast()).base64EncodedString()
        #expect(FeedPayload.parse(Array(cut.utf8)) == nil)
        let extra = "5,42," + Data(encoded + [0]).base64EncodedString()
        #expect(FeedPayload.parse(Array(extra.utf8)) == nil)
        // A change past the head it announces.
        #expect(FeedPayload.parse(Array(("4" + whole.dropFirst()).utf8)) == nil)
        #expect(FeedPayload.parse(Array("5,42,not base64!".utf8)) == nil)
        #expect(FeedPayload.parse(Array("x".utf8)) == nil)
        #expect(FeedPayload.parse([]) == nil)
        // An older memo-server's: the head alone.
        #expect(FeedPayload.parse(Array("5".utf8)) == FeedPayload.Announcement(head: 5, origin: nil, changes: nil))
    }
}
