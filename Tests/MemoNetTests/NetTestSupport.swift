import Dispatch
import Synchronization
import Testing

@testable import MemoNet

/// Waits for an event signalled from another thread, with a deadline so a broken test fails instead of hanging.
/// The deadline is a safety net, never the synchronisation itself.
final class NetSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func signal() {
        semaphore.signal()
    }

    /// Waits for `count` signals; records an issue and returns false when `seconds` pass first.
    @discardableResult
    func wait(count: Int = 1, seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let deadline = DispatchTime.now() + seconds
        for received in 0..<count where semaphore.wait(timeout: deadline) == .timedOut {
            Issue.record("timed out after \(received) of \(count) events", sourceLocation: sourceLocation)
            return false
        }
        return true
    }
}

/// A value shared between the test thread and event-loop threads.
final class NetBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func update<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }

    var value: Value {
        mutex.withLock { $0 }
    }
}

/// Bytes `0, 1, 2, ...` (mod 251, so they do not line up with buffer sizes), tagged with `seed`.
func netPattern(count: Int, seed: Int) -> [UInt8] {
    (0..<count).map { UInt8((($0 &+ seed &* 7) % 251)) }
}
