import Foundation
import MemoCore
import MemoPostgres
import MemoSQLite
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

    package func make(historyCapacity: Int = MemoLimits.defaultHistoryCapacity) throws -> StoreHandle {
        switch self {
        case .memory:
            return StoreHandle(store: MemoryStore(historyCapacity: historyCapacity), directory: nil)
        case .sqlite:
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path + "/memos.sqlite", historyCapacity: historyCapacity)
            return StoreHandle(store: store, directory: directory)
        case .postgres:
            let store = try PostgresStore(uri: try TestPostgres.shared().makeDatabase(), historyCapacity: historyCapacity)
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

/// A folder removed when the last reference goes away.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init() throws {
        let template = NSTemporaryDirectory() + "memo-test-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw POSIXError(.EIO) }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Collects what a subject or watch delivers, and lets a test wait for a count without sleeping.
package final class Recorder<Value: Sendable>: Sendable {
    private struct State {
        var values: [Value] = []
        var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    package init() {}

    package var values: [Value] { state.withLock { $0.values } }

    package func record(_ value: Value) {
        let ready = state.withLock { state in
            state.values.append(value)
            let count = state.values.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Waits until at least `count` values arrived.
    package func wait(for count: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.values.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}
