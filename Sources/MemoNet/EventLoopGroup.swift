import Synchronization

/// A fixed set of event loops handed out round-robin.
public final class EventLoopGroup: Sendable {
    /// The loops, in creation order.
    public let loops: [EventLoop]
    private let counter = Atomic<Int>(0)

    /// Starts `threads` loops named `"<name>-0"`, `"<name>-1"`, ...
    /// - Throws: `NetError` when a loop cannot be created; the loops started so far are shut down.
    public init(threads: Int, name: String = "memo-net") throws(NetError) {
        precondition(threads > 0, "an event loop group needs at least one thread")
        var loops: [EventLoop] = []
        do throws(NetError) {
            for index in 0..<threads {
                loops.append(try EventLoop.start(name: "\(name)-\(index)"))
            }
        } catch {
            for loop in loops { loop.shutdownGracefully() }
            throw error
        }
        self.loops = loops
    }

    /// The next loop, round-robin; callable from any thread.
    public func next() -> EventLoop {
        let index = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: index) % UInt(loops.count))]
    }

    /// Shuts every loop down and waits for their threads. Call from outside the group's threads.
    public func shutdownGracefully() {
        for loop in loops { loop.shutdownGracefully() }
    }
}
