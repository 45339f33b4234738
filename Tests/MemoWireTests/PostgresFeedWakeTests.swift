import Foundation
import MemoCore
import MemoWire
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
}
