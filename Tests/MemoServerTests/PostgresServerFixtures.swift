import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoPostgres
import MemoProbe
import MemoServer
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Synchronization
import TLSTestSupport
import Testing

/// Several in-process memo-servers over one PostgreSQL database, sharing one CA as real deployments do.
final class SharedDatabaseServers {
    let cluster: TestPostgres
    let database: String
    let certificates: TestCertificates
    private(set) var stores: [PostgresStore] = []
    private(set) var servers: [MemoServer] = []
    /// Each store's log lines (connection transitions, letting go, reloading), by server.
    let logs: [LogLines]

    /// - Parameters:
    ///   - recheckMillis: how often each feed reads the changes table without a notification.
    ///   - maxFeedLagMillis: how long a feed may go unconfirmed before its server lets go; long by default, so
    ///     that the tests of other faults on a loaded machine (a restart of PostgreSQL) are not cut short by it.
    ///   - gapWaitMillis: how long each feed waits for a notification's payload to fill a gap before it reads.
    init(
        count: Int, recheckMillis: Int = 1_000, historyCapacity: Int = MemoLimits.defaultHistoryCapacity,
        storageTimeoutMillis: Int = PostgresStore.defaultStorageTimeoutMillis, maxFeedLagMillis: Int = 60_000,
        gapWaitMillis: Int = PostgresStore.defaultGapWaitMillis, cluster: TestPostgres? = nil
    ) throws {
        self.cluster = try cluster ?? TestPostgres.shared()
        database = try self.cluster.makeDatabaseName()
        certificates = try TestCertificates()
        logs = (0..<count).map { _ in LogLines() }
        for index in 0..<count {
            let lines = logs[index]
            let store = try PostgresStore(
                uri: self.cluster.uri(database), historyCapacity: historyCapacity, recheckMillis: recheckMillis,
                storageTimeoutMillis: storageTimeoutMillis, maxFeedLagMillis: maxFeedLagMillis,
                gapWaitMillis: gapWaitMillis, log: { record in lines.lines.withLock { $0.append(record.text) } })
            let configuration = ServerConfiguration(listen: "127.0.0.1:0", certsDirectory: certificates.path)
            stores.append(store)
            servers.append(try MemoServer.start(configuration, store: store, log: .silent))
        }
    }

    func address(_ index: Int) -> SocketAddress { servers[index].boundAddress }

    /// Server `index`'s store log lines so far.
    func log(_ index: Int) -> [String] { logs[index].lines.withLock { $0 } }

    func connect(_ index: Int, timeout: Duration = .seconds(10)) throws -> TestClient {
        let client = try TestClient(address: address(index), identity: certificates.client(), timeout: timeout)
        try client.hello()
        return client
    }

    /// Every row of the changes table as (revision, kind, id, content bytes in hex), in revision order.
    func changesTable() throws -> [String] {
        let out = try cluster.sql(
            "SELECT revision || ' ' || kind || ' ' || id || ' ' || encode(content, 'hex') FROM memo_changes "
                + "ORDER BY revision", database: database)
        return out.isEmpty ? [] : out.split(separator: "\n").map(String.init)
    }

    /// The head revision stored in the database.
    func head() throws -> UInt64 {
        UInt64(try cluster.sql("SELECT revision FROM memo_head", database: database)) ?? 0
    }

    func stop() {
        for server in servers { server.shutdown(timeout: 5) }
        for store in stores { store.close() }
    }
}

/// A change as the changes table shows it, to compare what subscribers saw with the truth.
func tableRow(_ change: Change) -> String {
    let hex = change.memo.content.utf8.map { String(format: "%02x", $0) }.joined()
    return "\(change.revision) \(change.kind.rawValue) \(change.memo.id.uuidString.lowercased()) \(hex)"
}

/// A subscriber on its own thread that records every change it receives, from revision 0 on.
final class RecordingSubscriber: Sendable {
    private struct State {
        var changes: [Change] = []
        var failure: String?
        var stop = false
    }

    private let state = Mutex(State())
    private let arrived = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    init(servers: SharedDatabaseServers, index: Int) throws {
        // Short reads, so that the thread sees `stop` soon; a timed-out read loses nothing.
        let client = try servers.connect(index, timeout: .seconds(1))
        let subscription = try client.send(.subscribe(after: 0))
        let transfer = UncheckedClient(client: client)
        Thread.detachNewThread { [self] in
            let client = transfer.client
            while !state.withLock({ $0.stop }) {
                do {
                    let (_, message) = try client.receive { $0.requestID == subscription }
                    switch message {
                    case .change(let change): state.withLock { $0.changes.append(change) }
                    case .subscribed: break
                    default: state.withLock { $0.failure = "unexpected \(message)" }
                    }
                    arrived.signal()
                } catch TestClient.Failure.timedOut {
                    continue
                } catch {
                    state.withLock { $0.failure = "\(error)" }
                    break
                }
            }
            ended.signal()
        }
    }

    var changes: [Change] { state.withLock { $0.changes } }
    var failure: String? { state.withLock { $0.failure } }

    /// Waits until the last change received is at `revision` or later; false after `seconds`.
    func wait(until revision: UInt64, seconds: Double = 20) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while (changes.last?.revision ?? 0) < revision {
            if arrived.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    func stop() {
        state.withLock { $0.stop = true }
        ended.wait()
    }
}

/// `ProbeConnection` is not Sendable: this carries one to the thread that alone uses it from then on.
struct UncheckedClient: @unchecked Sendable {
    let client: TestClient
}

/// The revisions seen, checked for gaps and duplicates: nil when they are exactly 1...last.
func gapOrDuplicate(_ changes: [Change]) -> String? {
    for (index, change) in changes.enumerated() where change.revision != UInt64(index + 1) {
        return "position \(index) holds revision \(change.revision)"
    }
    return nil
}
