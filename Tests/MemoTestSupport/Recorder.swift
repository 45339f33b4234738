import Synchronization

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
