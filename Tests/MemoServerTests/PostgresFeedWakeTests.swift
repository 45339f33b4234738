import Foundation
import MemoModel
import MemoProbe
import MemoWire
import PostgresTestSupport
import Testing

@Suite("A server's feed follows the other servers' writes on their notifications",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresFeedWakeTests {
    @Test func anotherServersWritesArriveOnTheirNotificationsWithoutThePeriodicRead() throws {
        // The periodic read of the changes table is an hour away: only the notifications can bring the writes.
        let servers = try SharedDatabaseServers(count: 2, recheckMillis: 3_600_000)
        defer { servers.stop() }
        let subscriber = try RecordingSubscriber(servers: servers, index: 1)
        defer { subscriber.stop() }
        let writer = try servers.connect(0)
        var made: [Memo] = []
        for index in 0..<3 {
            guard case .memo(let memo) = try writer.request(.create(id: nil, insertMicros: nil, content: "쪽지 \(index)"))
            else {
                Issue.record("the create was refused")
                return
            }
            made.append(memo)
            // Each one on its own: server 1 writes nothing, so nothing but its feed's wake-up can bring them.
            try #require(subscriber.wait(until: memo.revision, seconds: 10))
        }
        #expect(subscriber.changes.map(\.memo) == made)
    }

    @Test func aNotificationReadAlongWithAQueryAnswerIsNotLeftWaitingForTheNextOne() throws {
        let servers = try SharedDatabaseServers(count: 2, recheckMillis: 3_600_000)
        defer { servers.stop() }
        let subscriber = try RecordingSubscriber(servers: servers, index: 1)
        defer { subscriber.stop() }
        let clients = [try servers.connect(0), try servers.connect(1)]
        for round in 0..<20 {
            // Writes through both servers at once: server 1's feed is busy with its own notifications and reads
            // when server 0's arrive, so libpq often reads one of them along with a query's answer. With the
            // periodic read an hour away, a notification left in libpq's buffer would wait for the next one,
            // and after the round's last write there is none.
            let sent = try clients.map { client in
                try (0..<10).map { try client.send(.create(id: nil, insertMicros: nil, content: "\(round) \($0)")) }
            }
            var last: UInt64 = 0
            for (client, ids) in zip(clients, sent) {
                for id in ids {
                    guard case .memo(let memo) = try client.receive({ $0.requestID == id }).1 else {
                        Issue.record("a create was refused")
                        return
                    }
                    last = max(last, memo.revision)
                }
            }
            try #require(subscriber.wait(until: last, seconds: 10), "round \(round)")
        }
        #expect(subscriber.changes.map(\.revision) == Array(1...UInt64(400)))
    }
}
