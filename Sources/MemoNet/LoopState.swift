/// The part of an event loop that only its thread touches: registrations and timers.
final class LoopState {
    struct Entry {
        let fd: Int32
        let handler: any EventHandler
        var interest: Interest
        /// The in-memory far end of an embedded socket (embedded loops only).
        var peer: EmbeddedPeer? = nil
    }

    var registrations: [UInt64: Entry] = [:]
    var nextRegistrationID: UInt64 = 1
    var timers = TimerHeap()
    /// An embedded loop's clock (nanoseconds), moved by `EventLoop.advanceTime(by:)`.
    var embeddedNow: UInt64 = 1_000_000_000

    /// Calls the handler of registration `id` for the epoll events in `mask`.
    ///
    /// After each call the registration is looked up again: a handler may deregister itself, or another one
    /// registered in the same batch, and a stale event must not reach it.
    func dispatch(_ mask: UInt32, to id: UInt64) {
        guard let entry = registrations[id] else { return }
        var delivered = false
        if mask & (LinuxAPI.EPOLLIN | LinuxAPI.EPOLLRDHUP | LinuxAPI.EPOLLPRI) != 0 {
            entry.handler.readable()
            delivered = true
        }
        if mask & LinuxAPI.EPOLLOUT != 0, let current = registrations[id] {
            current.handler.writable()
            delivered = true
        }
        // HUP and ERR come without being asked for. When a readable or writable call was made, the handler
        // learns of the failure from its next read or write; otherwise it would never hear of it.
        if !delivered, mask & (LinuxAPI.EPOLLHUP | LinuxAPI.EPOLLERR) != 0, let current = registrations[id] {
            current.handler.hangup()
        }
    }
}

/// A value that only one event loop's thread may touch.
///
/// `@unchecked Sendable` because the compiler cannot see the confinement: the value is created before the loop
/// thread starts (`pthread_create` orders that creation before the thread's first access) and is afterwards
/// read and written only on the loop's thread. `EventLoop`'s public entry points check that with
/// `preconditionInEventLoop()`.
final class ThreadConfined<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}

/// A non-Sendable value that may cross threads inside `@Sendable` closures but is used only on its event
/// loop's thread; each access checks that.
///
/// Use it to capture a connection object in `execute` or `schedule` work for its own loop.
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is created on the loop's thread (checked in `init`) and read or written only
    // there (checked on every access), so it is never touched by two threads.
    private final class Box {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    /// The loop whose thread owns the value.
    public let eventLoop: EventLoop
    private let box: Box

    /// Wraps `value`. Call on `eventLoop`'s thread.
    public init(_ value: Value, eventLoop: EventLoop) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        box = Box(value)
    }

    /// The value. Read and write it only on `eventLoop`'s thread.
    public var value: Value {
        get {
            eventLoop.preconditionInEventLoop()
            return box.value
        }
        nonmutating set {
            eventLoop.preconditionInEventLoop()
            box.value = newValue
        }
    }
}
