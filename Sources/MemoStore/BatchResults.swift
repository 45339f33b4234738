import MemoModel
import Synchronization

/// Collects the results of a batch whose writes complete one by one (perhaps in different transactions), and
/// hands them over once, in order, when the last arrives.
public final class BatchResults: Sendable {
    private struct State {
        var results: [Result<WriteOutcome, MemoError>?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let completion: @Sendable ([Result<WriteOutcome, MemoError>]) -> Void

    public init(count: Int, completion: @escaping @Sendable ([Result<WriteOutcome, MemoError>]) -> Void) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
        self.completion = completion
    }

    /// Records the result of write `index`; the last one calls the completion (outside the lock).
    public func set(_ index: Int, _ result: Result<WriteOutcome, MemoError>) {
        let finished = state.withLock { state -> [Result<WriteOutcome, MemoError>]? in
            state.results[index] = result
            state.remaining -= 1
            return state.remaining == 0 ? state.results.map { $0! } : nil
        }
        if let finished { completion(finished) }
    }
}
