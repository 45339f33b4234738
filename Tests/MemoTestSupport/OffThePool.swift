import Foundation

/// Runs `body`, which blocks (a child process waited for, a pipe read to its end), on a thread of its own and
/// waits for it without holding a thread of Swift's cooperative pool. That pool has one thread per core: on the
/// two cores CI has, a test that blocks one of them for minutes (a `memo-torture gray` run) left every async
/// test's tasks one thread, and a client's offline drain once waited two minutes for a turn.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.name = "test-blocking"
        thread.start()
    }
}
