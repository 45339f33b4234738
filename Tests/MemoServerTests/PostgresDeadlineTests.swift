import Foundation
import MemoModel
import MemoNet
import MemoPostgres
import MemoProbe
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Synchronization
import Testing

/// The ids of the memos stored in `database`, lowercased.
private func storedIDs(_ cluster: TestPostgres, _ database: String) throws -> Set<String> {
    Set(try cluster.sql("SELECT id FROM memos", database: database).split(separator: "\n").map(String.init))
}

/// Sends `signal` to every process in `pids`.
private func signal(_ pids: [pid_t], _ number: Int32) {
    for pid in pids { kill(pid, number) }
}

/// Sends `list` and gathers its chunks; nil when it is answered with an error.
private func listAll(_ client: TestClient) throws -> [Memo]? {
    let id = try client.send(.list)
    var memos: [Memo] = []
    while true {
        switch try client.receive({ $0.requestID == id }).1 {
        case .memos(_, let last, let chunk):
            memos += chunk
            if last { return memos }
        default:
            return nil
        }
    }
}

/// A cluster of its own (every process of it is stopped, which the other suites must not see), one server on it, a
/// client, and a memo written before any freeze.
private final class FrozenCluster {
    let cluster: TestPostgres
    let servers: SharedDatabaseServers
    let client: TestClient
    let before: Memo
    private var frozen: [pid_t] = []

    init(storageTimeoutMillis: Int) throws {
        cluster = try TestPostgres.dedicated()
        do {
            servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: storageTimeoutMillis, cluster: cluster)
        } catch {
            cluster.stop()
            throw error
        }
        do {
            client = try servers.connect(0, timeout: .seconds(30))
            before = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "before"))))
        } catch {
            servers.stop()
            cluster.stop()
            throw error
        }
    }

    /// Stops every process of the cluster (SIGSTOP).
    func freeze() throws {
        frozen = try cluster.processIDs()
        signal(frozen, SIGSTOP)
    }

    /// Lets them run again.
    func thaw() {
        signal(frozen, SIGCONT)
        frozen = []
    }

    /// Thaws, then stops the server and the cluster.
    func stop() {
        thaw()
        servers.stop()
        cluster.stop()
    }
}

@Suite("Every PostgreSQL call has a deadline: frozen, lock-queued or dead connections are answered in time",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresDeadlineTests {
    /// The storage timeout these tests give their servers, and the margin an answer may take beyond it on a
    /// loaded machine.
    static let timeoutMillis = 2_000
    static let margin: Duration = .seconds(3)

    @Test func aWriteWhilePostgreSQLIsFrozenIsAnsweredWithinTheStorageTimeoutAndTheServerRecovers() throws {
        let own = try FrozenCluster(storageTimeoutMillis: Self.timeoutMillis)
        defer { own.stop() }
        let (cluster, servers, client, before) = (own.cluster, own.servers, own.client, own.before)
        try own.freeze()
        // Two writes during the freeze: the first is cut off on a connection that stops answering, the second
        // finds no connection to be had. Each is answered 501 or 505 within the storage timeout, not after the
        // freeze.
        var refused: [UUID] = []
        for attempt in 0..<2 {
            let id = UUID()
            let started = ContinuousClock.now
            let reply = try client.request(.create(id: id, insertMicros: nil, content: "frozen \(attempt)"))
            let took = ContinuousClock.now - started
            #expect(took < .milliseconds(Self.timeoutMillis) + Self.margin, "write \(attempt) took \(took)")
            guard case .error(let code, _) = reply else {
                Issue.record("a write during the freeze was answered \(reply)")
                continue
            }
            #expect(code == .storageUnavailable || code == .outcomeUnknown, "\(reply)")
            if code == .storageUnavailable { refused.append(id) }
        }
        own.thaw()
        // The server makes its connections again by itself: a later write succeeds.
        var after: Memo?
        #expect(try pollUntil {
            after = memo(try client.request(.create(id: nil, insertMicros: nil, content: "after")))
            return after != nil
        })
        let stored = try storedIDs(cluster, servers.database)
        for acknowledged in [before, after].compactMap({ $0 }) {
            #expect(stored.contains(acknowledged.id.uuidString.lowercased()))
        }
        for id in refused { #expect(!stored.contains(id.uuidString.lowercased()), "a write answered 501 is stored") }
    }

    @Test func aWriteAnsweredOutcomeUnknownThatCommittedIsServedOnceThawedAndItsGivenUpConnectionIsClosed() throws {
        // The write reaches the frozen backend, is answered 505 at the storage timeout, and commits when the
        // backend runs again. Nothing claimed it durable, and no feed reads past the durable head: before, every
        // server served the memos without it (`get` said not found) until some later write's claim covered it.
        let own = try FrozenCluster(storageTimeoutMillis: Self.timeoutMillis)
        defer { own.stop() }
        let (cluster, servers, client, before) = (own.cluster, own.servers, own.client, own.before)
        try own.freeze()
        let id = UUID()
        let reply = try client.request(.create(id: id, insertMicros: nil, content: "frozen"))
        guard case .error(.outcomeUnknown, _) = reply else {
            Issue.record("the write sent to the frozen backend was answered \(reply)")
            return
        }
        own.thaw()
        #expect(try pollUntil { try storedIDs(cluster, servers.database).contains(id.uuidString.lowercased()) },
                "the write did not commit once the backend ran again")
        var served: Memo?
        #expect(try pollUntil {
            served = memo(try client.request(.get(id: id)))
            return served != nil
        }, "a committed write stayed unserved with no other write after it")
        #expect(served?.content == "frozen")
        #expect(served?.revision == before.revision + 1)
        // The connections given up at the deadline (the writer's, the feed's) are closed, so that their backends
        // end once they run again. Before, a role's first connection stayed open, its backend idle, for as long as
        // the server ran: the thread that had dropped it still held it.
        var roles = ""
        #expect(try pollUntil {
            roles = try cluster.sql(
                "SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_activity "
                    + "WHERE application_name LIKE 'memo-%'", database: servers.database)
            let names = roles.split(separator: ",")
            return names.count >= 3 && Set(names).count == names.count
        }, "a role's given-up connection is still open: \(roles)")
    }

    @Test func aServerWhoseFeedCannotFollowPastTheLagBoundLetsGoRefusesReadsAndServesAgainAfterReloading() throws {
        let cluster = try TestPostgres.dedicated()
        defer { cluster.stop() }
        let servers = try SharedDatabaseServers(
            count: 1, storageTimeoutMillis: 1_000, maxFeedLagMillis: 1_500, cluster: cluster)
        defer { servers.stop() }
        let store = servers.stores[0]
        let writer = try servers.connect(0)
        let made = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: "one"))))
        let watcher = try servers.connect(0, timeout: .seconds(30))
        let subscription = try watcher.send(.subscribe(after: made.revision))
        #expect(try watcher.receive { $0.requestID == subscription }.1 == .subscribed(head: made.revision))
        #expect(store.readiness == .ready)
        let frozen = try cluster.processIDs()
        signal(frozen, SIGSTOP)
        var thawed = false
        defer { if !thawed { signal(frozen, SIGCONT) } }
        // The feed cannot confirm anything for longer than the bound: the server says so and lets go.
        guard case .goingAway(.lagging, _) = try watcher.receive().1 else {
            Issue.record("the watcher was not let go with 504")
            return
        }
        #expect(store.readiness == .notReady("store unreachable"))
        // Reads are refused rather than answered from state that may be stale, and so are writes.
        let reader = try servers.connect(0, timeout: .seconds(30))
        guard case .error(.storageUnavailable, let text) = try reader.request(.get(id: made.id)) else {
            Issue.record("a read on a lagging server was answered")
            return
        }
        #expect(text.contains("fell behind its database"), "\(text)")
        #expect(try listAll(reader) == nil)
        guard case .error(.storageUnavailable, _) = try reader.request(
            .create(id: nil, insertMicros: nil, content: "refused")) else {
            Issue.record("a write on a lagging server was not refused")
            return
        }
        signal(frozen, SIGCONT)
        thawed = true
        // It reloads by itself and serves again.
        #expect(pollUntil { store.readiness == .ready })
        #expect(try pollUntil { try reader.request(.get(id: made.id)) == .memo(made) })
        #expect(try pollUntil {
            memo(try reader.request(.create(id: nil, insertMicros: nil, content: "after"))) != nil
        })
        let log = servers.log(0)
        #expect(log.filter { $0.contains("cannot follow the database") }.count == 1, "\(log)")
        #expect(log.contains { $0.hasPrefix("reloaded a snapshot at revision") }, "\(log)")
    }

    @Test func aServerWhoseDatabaseStopsAnsweringLetsGoAtTheLagBoundNotAStorageTimeoutLater() throws {
        // The storage timeout just under the bound: the feed's read is cut off at its deadline before the bound
        // passes, and the connect that follows gets no answer either (the postmaster is frozen too). The server
        // must let go at the bound; before, that connect held the feed's thread for a whole storage timeout more
        // (gray's partition-server-database: no 504 before a 10-12 s partition healed).
        let cluster = try TestPostgres.dedicated()
        defer { cluster.stop() }
        let servers = try SharedDatabaseServers(
            count: 1, storageTimeoutMillis: 6_000, maxFeedLagMillis: 6_500, cluster: cluster)
        defer { servers.stop() }
        let writer = try servers.connect(0)
        let made = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: "one"))))
        let watcher = try servers.connect(0, timeout: .seconds(40))
        let subscription = try watcher.send(.subscribe(after: made.revision))
        #expect(try watcher.receive { $0.requestID == subscription }.1 == .subscribed(head: made.revision))
        let frozen = try cluster.processIDs()
        signal(frozen, SIGSTOP)
        let started = ContinuousClock.now
        var thawed = false
        defer { if !thawed { signal(frozen, SIGCONT) } }
        guard case .goingAway(.lagging, _) = try watcher.receive().1 else {
            Issue.record("the watcher was not let go with 504")
            return
        }
        let took = ContinuousClock.now - started
        signal(frozen, SIGCONT)
        thawed = true
        // A read is due within the recheck (1 s) of the freeze, so the bound passes by 7.5 s; without the bound on
        // the connect the server let go at 12 s or later (read cut off at 6 s, then a connect of 6 s).
        #expect(took < .seconds(10), "let go after \(took)")
        #expect(pollUntil { servers.stores[0].readiness == .ready })
    }

    @Test func aFrozenFeedBackendIsFoundAndItsServerReconnectsAndCatchesUp() throws {
        let servers = try SharedDatabaseServers(count: 2, storageTimeoutMillis: Self.timeoutMillis)
        defer { servers.stop() }
        // Server 0's stores were opened first, so its feed's backend is the older of the two.
        let feed = try #require(try servers.cluster.feedBackends(database: servers.database).first)
        let subscriber = try RecordingSubscriber(servers: servers, index: 0)
        defer { subscriber.stop() }
        kill(feed, SIGSTOP)
        defer { kill(feed, SIGCONT) }
        let writer = try servers.connect(1)
        var made: [Memo] = []
        for index in 0..<20 {
            made.append(try #require(memo(try writer.request(
                .create(id: nil, insertMicros: nil, content: "while the feed is frozen \(index)")))))
        }
        // Writes through server 0 itself commit on its writer connection: each is answered as committed, within
        // the storage timeout, although its feed cannot apply them meanwhile.
        let own = try servers.connect(0, timeout: .seconds(30))
        for index in 0..<3 {
            let started = ContinuousClock.now
            let reply = try own.request(.create(id: nil, insertMicros: nil, content: "through the frozen one \(index)"))
            #expect(ContinuousClock.now - started < .milliseconds(Self.timeoutMillis) + Self.margin)
            made.append(try #require(memo(reply), "\(reply)"))
        }
        let head = try servers.head()
        // Server 0 drops the frozen connection, makes another and catches up: its watcher misses nothing.
        #expect(subscriber.wait(until: head, seconds: 30))
        #expect(subscriber.failure == nil)
        #expect(gapOrDuplicate(subscriber.changes) == nil)
        #expect(subscriber.changes.map(tableRow) == (try servers.changesTable()))
        // Its reads show every memo.
        let reader = try servers.connect(0)
        #expect(try listAll(reader)?.count == made.count)
        for memo in made { #expect(try reader.request(.get(id: memo.id)) == .memo(memo)) }
        // The frozen backend is found at the feed's next read at the latest (the periodic one: its writer handed it
        // every change, and it sends nothing else), which the storage timeout cuts off. Each transition is logged
        // once.
        #expect(pollUntil {
            servers.log(0).contains { $0.hasPrefix("PostgreSQL feed caught up at revision") }
        }, "\(servers.log(0))")
        let log = servers.log(0)
        #expect(log.filter { $0.hasPrefix("PostgreSQL feed connection lost") }.count == 1, "\(log)")
        #expect(log.filter { $0.hasPrefix("PostgreSQL feed connection restored") }.count == 1, "\(log)")
        #expect(log.filter { $0.hasPrefix("PostgreSQL feed caught up at revision") }.count == 1, "\(log)")
    }

    @Test func aWriterConnectionTerminatedWhileIdleCostsNoWrite() throws {
        let servers = try SharedDatabaseServers(count: 1, storageTimeoutMillis: Self.timeoutMillis)
        defer { servers.stop() }
        let client = try servers.connect(0)
        _ = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "first"))))
        let activity = "FROM pg_stat_activity WHERE application_name = 'memo-writer' AND datname = "
            + "'\(servers.database)'"
        try servers.cluster.sql("SELECT pg_terminate_backend(pid) \(activity)", database: "postgres")
        #expect(try pollUntil { try servers.cluster.sql("SELECT count(*) \(activity)", database: "postgres") == "0" })
        // The server finds the idle connection dead before it sends the write, and sends it on a fresh one.
        let reply = try client.request(.create(id: nil, insertMicros: nil, content: "second"))
        let second = try #require(memo(reply), "\(reply)")
        #expect(try storedIDs(servers.cluster, servers.database).contains(second.id.uuidString.lowercased()))
    }

    @Test func writesLockQueuedBehindAnotherSessionAreRefusedWithinTheStorageTimeout() throws {
        let servers = try SharedDatabaseServers(count: 2, storageTimeoutMillis: Self.timeoutMillis)
        defer { servers.stop() }
        let cluster = servers.cluster
        let database = servers.database
        // Another session holds the head lock for 8 s: both servers' writes queue behind it, one behind the other.
        let holder = DispatchGroup()
        holder.enter()
        Thread.detachNewThread {
            defer { holder.leave() }
            _ = try? cluster.sql(
                "BEGIN; SELECT revision FROM memo_head FOR UPDATE; SELECT pg_sleep(8); COMMIT", database: database)
        }
        defer { holder.wait() }
        #expect(try pollUntil {
            try cluster.sql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND query LIKE '%pg_sleep(8)%' "
                    + "AND state = 'active' AND pid <> pg_backend_pid()", database: "postgres") == "1"
        })
        let answers = Mutex<[(id: UUID, reply: Message, took: Duration)]>([])
        let group = DispatchGroup()
        for index in 0..<4 {
            let client = UncheckedClient(client: try servers.connect(index % 2, timeout: .seconds(30)))
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let id = UUID()
                let started = ContinuousClock.now
                let reply = (try? client.client.request(.create(id: id, insertMicros: nil, content: "queued")))
                    ?? .error(code: .internalError, message: "no answer")
                answers.withLock { $0.append((id, reply, ContinuousClock.now - started)) }
            }
        }
        group.wait()
        let results = answers.withLock { $0 }
        #expect(results.count == 4)
        for result in results {
            #expect(result.took < .milliseconds(Self.timeoutMillis) + Self.margin, "\(result.took)")
            // Refused by PostgreSQL's lock timeout, set below the storage timeout: rolled back, so 501.
            guard case .error(.storageUnavailable, _) = result.reply else {
                Issue.record("a lock-queued write was answered \(result.reply)")
                continue
            }
        }
        holder.wait()
        let client = try servers.connect(0)
        #expect(memo(try client.request(.create(id: nil, insertMicros: nil, content: "after"))) != nil)
        let stored = try storedIDs(cluster, database)
        for result in results { #expect(!stored.contains(result.id.uuidString.lowercased())) }
    }
}

@Suite("A server that falls below the retained history lets its clients go and reloads",
       .enabled(if: postgresTestsEnabled), .serialized)
struct PostgresLaggingProcessTests {
    @Test func aServerStoppedWhileTheHistoryMovedOnSendsGoingAway504ThenServesTheFullSet() throws {
        let cluster = try TestPostgres.shared()
        let database = try cluster.makeDatabaseName()
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        // The lag bound far away: only finding itself below the retained history makes the server let go here.
        let arguments = ["--store", cluster.uri(database), "--certs", certificates.path, "--listen", "127.0.0.1:0",
                         "--history", "50", "--max-feed-lag", "600"]
        let first = try ServerProcess(arguments: arguments, directory: data)
        defer {
            first.signal(SIGTERM)
            _ = first.waitForExit()
        }
        let second = try ServerProcess(arguments: arguments, directory: data)
        var stopped = false
        defer {
            if stopped { second.signal(SIGCONT) }
            second.signal(SIGTERM)
            _ = second.waitForExit()
        }
        let writer = try TestClient(address: try SocketAddress(parsing: first.address), identity: certificates.client())
        try writer.hello()
        for index in 0..<10 {
            _ = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: "early \(index)"))))
        }
        let watcher = try TestClient(
            address: try SocketAddress(parsing: second.address), identity: certificates.client(),
            timeout: .seconds(30))
        try watcher.hello()
        let subscription = try watcher.send(.subscribe(after: 0))
        var seen: [UInt64] = []
        while seen.count < 10 {
            if case .change(let change) = try watcher.receive({ $0.requestID == subscription }).1 {
                seen.append(change.revision)
            }
        }
        second.signal(SIGSTOP)
        stopped = true
        // Too large for any notification's payload (PostgreSQL's limit is 8,000 bytes): the stopped server's queued
        // notifications carry only the head, so on waking it must read the changes table, and finds them pruned.
        // (Changes carried in the payloads let it follow without the table: correct, but not the path under test.)
        let padding = String(repeating: "x", count: 8_000)
        for index in 0..<300 {
            let content = "late \(index) " + padding
            _ = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: content))))
        }
        // The first server pruned the changes the second one never applied.
        #expect(UInt64(try cluster.sql("SELECT revision FROM memo_floor", database: database)) ?? 0 > 10)
        second.signal(SIGCONT)
        stopped = false
        // The watcher on the second server is let go with 504, after no change it could not have followed.
        var farewell: Message?
        while farewell == nil {
            let (frame, message) = try watcher.receive()
            switch message {
            case .change(let change) where frame.requestID == subscription:
                #expect(change.revision == (seen.last ?? 0) + 1)
                seen.append(change.revision)
            case .goingAway:
                farewell = message
            default:
                Issue.record("unexpected \(message)")
                farewell = message
            }
        }
        guard case .goingAway(.lagging, _) = farewell else {
            Issue.record("the watcher got \(String(describing: farewell)), not going-away 504")
            return
        }
        // The second server reloads by itself and then serves every memo.
        let reader = try TestClient(address: try SocketAddress(parsing: second.address), identity: certificates.client())
        try reader.hello()
        #expect(try pollUntil { try listAll(reader)?.count == 310 })
        #expect(second.log.contains("cannot follow the database"), "\(second.log)")
        #expect(second.log.contains("reloaded a snapshot at revision 310"), "\(second.log)")
    }
}
