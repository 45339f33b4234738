import MemoModel
/// Why an action did not run.
public enum ActionError: Error, Sendable, Equatable {
    /// The action was still running its previous input.
    case notEnabled
}

/// A user action as a value: an input starts async work; its result, whether it is running, and its errors are
/// subjects.
///
/// One input runs at a time: executing while busy fails with `ActionError.notEnabled` (as RxSwift's Action does),
/// so that a key pressed twice does not save twice. Front-end state (`@FrontEnd`): the work itself runs wherever
/// its `async` calls take it (the store's request goes to the client's loop), and the front end keeps going
/// meanwhile.
@FrontEnd
public final class Action<Input: Sendable, Output: Sendable> {
    /// True while the work runs; starts false.
    public let executing = Subject(false)
    /// Every result, as it arrives (no replay).
    public let results = Subject<Output>()
    /// Every error the work threw (no replay).
    public let errors = Subject<any Error>()

    private let work: @Sendable (Input) async throws -> Output
    private var busy = false

    public init(_ work: @escaping @Sendable (Input) async throws -> Output) {
        self.work = work
    }

    /// True while an input runs.
    public var isExecuting: Bool { busy }

    /// Runs the work for `input` and returns what it gave; the result or error is also sent to the subjects.
    @discardableResult
    public func execute(_ input: Input) async -> Result<Output, any Error> {
        guard !busy else { return .failure(ActionError.notEnabled) }
        busy = true
        executing.send(true)
        let result: Result<Output, any Error>
        do {
            result = .success(try await work(input))
        } catch {
            result = .failure(error)
        }
        busy = false
        executing.send(false)
        switch result {
        case .success(let output): results.send(output)
        case .failure(let error): errors.send(error)
        }
        return result
    }
}
