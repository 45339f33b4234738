import Foundation
import MemoModel
import MemoPostgres
import MemoSQLite
import MemoStore
import MemoTestSupport
import PostgresTestSupport
import Synchronization
import Testing

/// The stores every storage test runs against.
package enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    /// PostgreSQL only where it is installed (or required, see `postgresTestsEnabled`).
    package static var allCases: [StoreKind] {
        postgresTestsEnabled ? [.memory, .sqlite, .postgres] : [.memory, .sqlite]
    }

    package var testDescription: String { rawValue }

    package func make(
        historyCapacity: Int = MemoLimits.defaultHistoryCapacity, versions: VersionPolicy = .standard,
        clock: @escaping @Sendable () -> Int64 = { Date().unixMicros }
    ) throws -> StoreHandle {
        switch self {
        case .memory:
            return StoreHandle(
                store: MemoryStore(historyCapacity: historyCapacity, clock: clock, versions: versions), directory: nil)
        case .sqlite:
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(
                path: directory.path + "/memos.sqlite", historyCapacity: historyCapacity, clock: clock,
                versions: versions)
            return StoreHandle(store: store, directory: directory)
        case .postgres:
            let store = try PostgresStore(
                uri: try TestPostgres.shared().makeDatabase(), historyCapacity: historyCapacity, clock: clock,
                versions: versions)
            return StoreHandle(store: store, directory: nil)
        }
    }
}

/// A store under test and the folder its file lives in; closing it closes the store.
package struct StoreHandle {
    package let store: any ServingStore
    package let directory: TemporaryDirectory?

    package var path: String? { directory.map { $0.path + "/memos.sqlite" } }
}

