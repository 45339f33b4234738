import ClientTestSupport
import Foundation
import MemoModel
import MemoNet
import MemoPostgres
import MemoProbe
import MemoStore
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Synchronization
import TLSTestSupport
import Testing

@Suite("Several servers over one PostgreSQL: one gap-free revision order, live across servers",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresServerTests {
    @Test func aWriteOnOneServerReachesASubscriberOnAnother() throws {
        let servers = try SharedDatabaseServers(count: 2)
        defer { servers.stop() }
        let subscriber = try RecordingSubscriber(servers: servers, index: 1)
        defer { subscriber.stop() }
        let writer = try servers.connect(0)
        let made = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: "A에서 씀"))))
        #expect(subscriber.wait(until: made.revision))
        #expect(subscriber.changes.map(\.memo) == [made])
        // The other server's table has it too, so a read there finds it.
        #expect(try servers.connect(1).request(.get(id: made.id)) == .memo(made))
        // Three PostgreSQL connections per server (writer, claimer and feed), however many clients it serves.
        let clients = try (0..<10).map { try servers.connect($0 % 2) }
        let connections = try servers.cluster.sql(
            "SELECT application_name || ' ' || count(*) FROM pg_stat_activity WHERE datname = '\(servers.database)' "
                + "GROUP BY application_name ORDER BY 1", database: "postgres")
        #expect(connections == "memo-claimer 2\nmemo-feed 2\nmemo-writer 2")
        _ = clients
    }

    @Test func theHistoryFloorIsStoredSoEveryServerAnswersHistoryGoneAlike() async throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let first = try PostgresStore(uri: cluster.uri(database), historyCapacity: 10)
        defer { first.close() }
        for index in 0..<100 { _ = try await first.createMemo(content: "memo \(index)") }
        // Pruned by the server that wrote: the floor is stored, older changes are gone from the table.
        let floor = UInt64(try cluster.sql("SELECT revision FROM memo_floor", database: database)) ?? 0
        #expect(floor >= 90 - 64 && floor <= 90)
        // (Kept versions and trash entries stay below the floor: only the other rows go.)
        #expect(try cluster.sql(
            "SELECT count(*) FROM memo_changes WHERE revision <= \(floor) AND vkind = 0", database: database) == "0")
        // A server started later holds what the database holds after its floor, and refuses what is older alike.
        let second = try PostgresStore(uri: cluster.uri(database), historyCapacity: 10)
        defer { second.close() }
        for store in [first, second] {
            let gone = Recorder<WatchEvent>()
            store.watch(from: .after(floor - 1)) { gone.record($0) }.cancel()
            #expect(gone.values == [.historyGone(requested: floor - 1, oldestAvailable: 90)])
            let resumed = Recorder<WatchEvent>()
            store.watch(from: .after(95)) { resumed.record($0) }.cancel()
            #expect(resumed.values.count == 6)
        }
    }

    @Test func aDatabaseWithANewerSchemaIsRefusedClearly() throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        try PostgresStore(uri: cluster.uri(database)).close()
        try cluster.sql("UPDATE memo_schema SET version = 99", database: database)
        #expect {
            try PostgresStore(uri: cluster.uri(database))
        } throws: { error in
            "\(error)".contains("version 99, newer than this memo-server knows (2)")
        }
    }

    @Test func anUnreachableDatabaseFailsTheStartWithLibpqsMessage() throws {
        let cluster = try TestPostgres.shared()
        #expect {
            try PostgresStore(uri: "postgresql://memo@127.0.0.1:\(cluster.port)/no_such_database")
        } throws: { error in
            "\(error)".contains("no_such_database") && "\(error)".contains("does not exist")
        }
    }

    @Test func aCreateRetriedOnAnotherServerMakesOneMemo() throws {
        let servers = try SharedDatabaseServers(count: 2)
        defer { servers.stop() }
        let id = UUID()
        let first = try #require(memo(try servers.connect(0).request(.create(id: id, insertMicros: nil, content: "x"))))
        // The answer was lost: the client retries the same create, with the same id, on the other server.
        let retried = try servers.connect(1).request(.create(id: id, insertMicros: nil, content: "x"))
        #expect(retried == .memo(first))
        #expect(try servers.head() == 1)
        #expect(try servers.changesTable().count == 1)
    }

    @Test func concurrentEditsOfOneRevisionThroughTwoServersOneWinsOneConflicts() throws {
        let servers = try SharedDatabaseServers(count: 2)
        defer { servers.stop() }
        let made = try #require(
            memo(try servers.connect(0).request(.create(id: nil, insertMicros: nil, content: "v1"))))
        let clients = [try servers.connect(0), try servers.connect(1)]
        let ids = try clients.enumerated().map { index, client in
            try client.send(.update(id: made.id, expectedRevision: made.revision, content: "edit \(index)"))
        }
        let replies = try zip(clients, ids).map { client, id in try client.receive { $0.requestID == id }.1 }
        let wins = replies.compactMap(memo)
        let conflicts = replies.filter { if case .error(.conflict, _) = $0 { return true } else { return false } }
        #expect(wins.count == 1 && conflicts.count == 1, "\(replies)")
        #expect(try servers.head() == 2)
    }

    @Test func fiftyWritersOverThreeServersGiveEverySubscriberTheSameGapFreeChanges() throws {
        let servers = try SharedDatabaseServers(count: 3)
        defer { servers.stop() }
        let subscribers = try (0..<3).map { try RecordingSubscriber(servers: servers, index: $0) }
        defer { for subscriber in subscribers { subscriber.stop() } }
        let seconds = Double(ProcessInfo.processInfo.environment["MEMO_PG_STORM_SECONDS"] ?? "") ?? 10
        let acknowledged = try writeStorm(servers: servers, writers: 50, seconds: seconds)
        #expect(acknowledged.failures.isEmpty, "\(acknowledged.failures.prefix(3))")
        let head = try servers.head()
        #expect(head >= UInt64(acknowledged.memos.count))
        let table = try servers.changesTable()
        #expect(table.count == Int(head))
        for subscriber in subscribers {
            #expect(subscriber.wait(until: head))
            #expect(subscriber.failure == nil)
            #expect(gapOrDuplicate(subscriber.changes) == nil)
            #expect(subscriber.changes.map(tableRow) == table)
        }
    }

    @Test func aKilledFeedConnectionMissesNothing() throws {
        let servers = try SharedDatabaseServers(count: 2)
        defer { servers.stop() }
        let subscriber = try RecordingSubscriber(servers: servers, index: 1)
        defer { subscriber.stop() }
        let writer = try servers.connect(0)
        for round in 0..<4 {
            for index in 0..<25 {
                _ = try #require(memo(try writer.request(
                    .create(id: nil, insertMicros: nil, content: "round \(round) memo \(index)"))))
                if index == 10 {
                    // Every feed connection of this database: the notifications sent meanwhile are lost.
                    try servers.cluster.sql(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
                            + "'memo-feed' AND datname = '\(servers.database)'", database: "postgres")
                }
            }
        }
        #expect(subscriber.wait(until: 100))
        #expect(gapOrDuplicate(subscriber.changes) == nil)
        #expect(subscriber.changes.map(tableRow) == (try servers.changesTable()))
    }

    @Test func postgresRestartedDuringWritesLosesNoAcknowledgedWriteAndRefusesWithStorageUnavailable() throws {
        // A cluster of its own: restarting the shared one would cut the tests running beside this one.
        let cluster = try TestPostgres.dedicated()
        defer { cluster.stop() }
        let servers = try SharedDatabaseServers(count: 2, cluster: cluster)
        defer { servers.stop() }
        let subscribers = try (0..<2).map { try RecordingSubscriber(servers: servers, index: $0) }
        defer { for subscriber in subscribers { subscriber.stop() } }
        let restarted = Recorder<Bool>()
        let database = servers.database
        Thread.detachNewThread {
            // Writes before, during and after: the restart comes once the storm has committed 40 changes.
            _ = try? pollUntil {
                (Int(try cluster.sql("SELECT revision FROM memo_head", database: database)) ?? 0) >= 40
            }
            _ = try? cluster.restartImmediately()
            restarted.record(true)
        }
        let result = try writeStorm(servers: servers, writers: 10, seconds: 4, whileRunning: {
            restarted.values.isEmpty
        })
        #expect(!restarted.values.isEmpty)
        // Writes during the outage were refused with 501 (nothing changed) or, when the connection broke after
        // the write was sent, 505 (outcome unknown), each within a bounded time (not the 10 s timeout).
        #expect(!result.failures.isEmpty)
        #expect(result.failures.allSatisfy { $0.code == .storageUnavailable || $0.code == .outcomeUnknown },
                "\(result.failures.prefix(3))")
        #expect(result.slowestFailure < .seconds(6), "\(result.slowestFailure)")
        // Writes work again soon after (the servers reconnect with a backoff of at most 2 s), and every
        // acknowledged one is stored.
        let again = try servers.connect(1)
        let deadline = ContinuousClock.now + .seconds(10)
        var reply = try again.request(.create(id: nil, insertMicros: nil, content: "z"))
        while memo(reply) == nil, ContinuousClock.now < deadline {
            guard case .error(.storageUnavailable, _) = reply else { break }
            reply = try again.request(.create(id: nil, insertMicros: nil, content: "z"))
        }
        let after = try #require(memo(reply), "\(reply)")
        let stored = Set(try servers.cluster.sql("SELECT id FROM memos", database: servers.database)
            .split(separator: "\n").map(String.init))
        for memo in result.memos + [after] { #expect(stored.contains(memo.id.uuidString.lowercased())) }
        // A create answered 501 changed nothing.
        for id in result.refusedCreates { #expect(!stored.contains(id.uuidString.lowercased())) }
        let head = try servers.head()
        let table = try servers.changesTable()
        for subscriber in subscribers {
            #expect(subscriber.wait(until: head))
            #expect(gapOrDuplicate(subscriber.changes) == nil)
            #expect(subscriber.changes.map(tableRow) == table)
        }
    }
}

/// What a write storm gave: the acknowledged memos, and the error codes of the refused writes.
struct StormResult {
    var memos: [Memo] = []
    var failures: [(code: ErrorCode, message: String)] = []
    /// The ids of the creates answered 501 storage-unavailable.
    var refusedCreates: [UUID] = []
    var slowestFailure: Duration = .zero
}

/// `writers` clients spread over the servers, each creating memos (and editing every fourth) as fast as answers
/// come, for `seconds`, and at least while `whileRunning` holds.
func writeStorm(
    servers: SharedDatabaseServers, writers: Int, seconds: Double, whileRunning: @escaping @Sendable () -> Bool = {
        false
    }
) throws -> StormResult {
    let clients = try (0..<writers).map { UncheckedClient(client: try servers.connect($0 % servers.servers.count)) }
    let result = Mutex(StormResult())
    let group = DispatchGroup()
    let end = ContinuousClock.now + .seconds(seconds)
    for (number, transfer) in clients.enumerated() {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            let client = transfer.client
            var count = 0
            while ContinuousClock.now < end || whileRunning() {
                count += 1
                let started = ContinuousClock.now
                let message: Message
                let id = UUID()
                do {
                    message = try client.request(
                        .create(id: id, insertMicros: nil, content: "w\(number) #\(count)"))
                } catch {
                    result.withLock { $0.failures.append((.internalError, "\(error)")) }
                    return
                }
                switch message {
                case .memo(let memo):
                    result.withLock { $0.memos.append(memo) }
                    if count % 4 == 0 {
                        if case .memo(let edited) = try? client.request(
                            .update(id: memo.id, expectedRevision: memo.revision, content: "edited \(count)"))
                        {
                            result.withLock { $0.memos.append(edited) }
                        }
                    }
                case .error(let code, let text):
                    let took = ContinuousClock.now - started
                    result.withLock { state in
                        state.failures.append((code, text))
                        if code == .storageUnavailable { state.refusedCreates.append(id) }
                        state.slowestFailure = max(state.slowestFailure, took)
                    }
                default:
                    result.withLock { $0.failures.append((.internalError, "unexpected \(message)")) }
                }
            }
        }
    }
    group.wait()
    return result.withLock { $0 }
}

@Suite("Several servers over one PostgreSQL: processes, a client given two addresses",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresProcessTests {
    @Test func watchGivenTwoServersStaysGapFreeWhileItsServerIsStopped() throws {
        let cluster = try TestPostgres.shared()
        let uri = try cluster.makeDatabase()
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        let arguments = ["--store", uri, "--certs", certificates.path, "--listen", "127.0.0.1:0"]
        let first = try ServerProcess(arguments: arguments, directory: data)
        var firstRunning = true
        defer {
            if firstRunning { first.signal(SIGTERM) }
            _ = first.waitForExit()
        }
        let second = try ServerProcess(arguments: arguments, directory: data)
        defer {
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        let writer = try TestClient(
            address: try SocketAddress(parsing: second.address), identity: certificates.client())
        try writer.hello()
        var made: [Memo] = []
        func write(_ count: Int) throws {
            for _ in 0..<count {
                made.append(try #require(memo(try writer.request(
                    .create(id: nil, insertMicros: nil, content: "memo \(made.count)")))))
            }
        }
        try write(1)
        // The watch starts on the first address, the one that is stopped below.
        let watch = try ClientProcess(
            ["watch", "--json", "--server", "\(first.address),\(second.address)", "--certs", certificates.path],
            directory: data)
        defer { watch.stop() }
        _ = try watch.waitForLines(1)
        try write(10)
        _ = try watch.waitForLines(1 + 10)
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        firstRunning = false
        try write(10)
        let lines = try watch.waitForLines(1 + 20)
        let changes = try lines.dropFirst().map(WatchLine.init)
        #expect(changes.map(\.revision) == Array(2...21))
        #expect(changes.map(\.id) == made.dropFirst().map { $0.id.uuidString.lowercased() })
    }

    @Test func theServerLogNamesTheDatabaseWithoutItsPassword() throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        // The test cluster trusts loopback, so the password is accepted and ignored.
        let uri = "postgresql://memo:hunter2-secret@127.0.0.1:\(cluster.port)/\(database)"
        let server = try ServerProcess(
            arguments: ["--store", uri, "--certs", certificates.path, "--listen", "127.0.0.1:0"], directory: data)
        server.signal(SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(server.log.contains("serving postgresql://memo:***@127.0.0.1:\(cluster.port)/\(database)"),
                "\(server.log)")
        #expect(!server.log.contains("hunter2"))
        #expect(server.log.contains("write batches sent to PostgreSQL"))
    }

    @Test func killNineOfOneOfTwoServersDuringWritesLosesNothingAndItsWatchersMissNothing() throws {
        let uri = try TestPostgres.shared().makeDatabase()
        let (status, out, err) = try runTool("memo-torture", [
            "crash", "--store", uri, "--cycles", "3", "--writers", "4", "--watchers", "2", "--min-uptime", "0.3",
            "--max-uptime", "1",
        ])
        let summary = try #require(out.split(separator: "\n").first { $0.hasPrefix("crash summary: ") }, "\(out)\(err)")
        #expect(status == 0, "\(out)\(err)")
        #expect(summary.hasPrefix("crash summary: PASS; cycles 3;"))
        for zero in ["lost 0,", "duplicated 0,", "revision-regressions 0,", "missed 0,", "repeated 0,",
                     "mismatched 0;"] {
            #expect(summary.contains(zero), "\(summary)")
        }
        #expect(!summary.contains("writes acknowledged 0 "), "\(summary)")
        #expect(out.contains("surviving server"))
    }
}
