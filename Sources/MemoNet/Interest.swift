/// The readiness a registration asks to be told about.
public struct Interest: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Data (or end of stream) can be read, or a listener has a connection to accept.
    public static let readable = Interest(rawValue: 1 << 0)
    /// The send buffer has room, or a non-blocking connect has finished.
    public static let writable = Interest(rawValue: 1 << 1)

    public static let none: Interest = []
    public static let all: Interest = [.readable, .writable]

    /// The epoll mask for this interest. Level-triggered: no EPOLLET.
    var epollMask: UInt32 {
        var mask: UInt32 = 0
        if contains(.readable) { mask |= LinuxAPI.EPOLLIN | LinuxAPI.EPOLLRDHUP }
        if contains(.writable) { mask |= LinuxAPI.EPOLLOUT }
        return mask
    }
}

/// Receives readiness for one registered descriptor. Every method is called on the event loop's thread.
///
/// Readiness is level-triggered: a method is called again on each loop iteration while the condition holds,
/// so a handler may read a bounded amount and return (fairness), but must turn `.writable` interest off when
/// it has nothing to write, or it will be called in a busy loop.
public protocol EventHandler: AnyObject {
    /// The descriptor is readable, or the peer closed its side (a read then returns `.eof`).
    func readable()
    /// The descriptor is writable, or a non-blocking connect has completed or failed (see `finishConnect()`).
    func writable()
    /// The descriptor hung up or has an error that no `readable()`/`writable()` call in the same wake-up
    /// reported; also called once for every handler still registered when the loop shuts down.
    /// The handler should deregister and close.
    func hangup()
}

extension EventHandler {
    public func readable() {}
    public func writable() {}
    public func hangup() {}
}

/// A descriptor registered with an event loop. Use it on that loop's thread to change interest or deregister.
public struct Registration: Sendable, Hashable {
    /// Unique for the loop's lifetime, so that a stale event for a closed and reused descriptor number never
    /// reaches the handler of a later registration.
    let id: UInt64
    /// The registered descriptor.
    public let fileDescriptor: Int32
}
