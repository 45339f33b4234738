import MemoCore
import Synchronization

/// A view model's state behind a lock, published through a subject after every change.
///
/// Subscribers run without the lock held, so they may call back into the view model. When two threads change the
/// state at once their sends may cross; the one that sent an older state then sends the newest, so the subject
/// always ends on the latest state.
final class StateStore<State: Sendable>: Sendable {
    private let lock: Mutex<(state: State, version: UInt64)>
    let subject: Subject<State>

    init(_ initial: State) {
        lock = Mutex((initial, 0))
        subject = Subject(initial)
    }

    var value: State { lock.withLock { $0.state } }

    /// Changes the state and publishes it.
    @discardableResult
    func update<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, state, version) = lock.withLock { locked in
            let result = body(&locked.state)
            locked.version += 1
            return (result, locked.state, locked.version)
        }
        publish(state, version)
        return result
    }

    private func publish(_ state: State, _ version: UInt64) {
        var (state, version) = (state, version)
        while true {
            subject.send(state)
            let latest = lock.withLock { $0 }
            if latest.version == version { return }
            (state, version) = (latest.state, latest.version)
        }
    }
}
