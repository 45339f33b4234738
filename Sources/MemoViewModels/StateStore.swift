import MemoModel
/// A view model's state, published through a subject after every change.
///
/// Front-end state: only the front end's loop touches it (`@FrontEnd`), so no lock. A subscriber that changes the
/// state while being told of a change gets the newer state after the current one (the subject queues it).
@FrontEnd
final class StateStore<State: Sendable> {
    private(set) var value: State
    let subject: Subject<State>

    init(_ initial: State) {
        value = initial
        subject = Subject(initial)
    }

    /// Changes the state and publishes it.
    @discardableResult
    func update<Result>(_ body: (inout State) -> Result) -> Result {
        let result = body(&value)
        subject.send(value)
        return result
    }
}
