/// Where view models do the work a store hands them (a list's edits, a detail's memo).
///
/// A store delivers on its own thread: the remote store on the client's I/O loop, a local write's caller, the
/// memory store inline. The terminal app hands every such delivery to its own event loop, the one that also
/// handles keys, so that all view-model work runs on one executor, in the order it arrived: keys in the order
/// typed, a store's deliveries in the order the store queued them (its subjects guarantee that), interleaved
/// by arrival. The I/O loop then only queues, and never waits for a view model.
public struct FrontEndExecutor: Sendable {
    private let hop: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// - Parameter hop: queues the work on the front end's executor; the work must run once, in queue order.
    public init(_ hop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.hop = hop
    }

    /// Runs work where it is handed over: for tests and tools with no event loop (with the memory store, a view
    /// model then shows a write before the write returns).
    public static let inline = FrontEndExecutor { $0() }

    func run(_ work: @escaping @Sendable () -> Void) { hop(work) }
}
