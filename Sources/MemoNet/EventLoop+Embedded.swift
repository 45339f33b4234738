import Glibc
import Synchronization

extension EventLoop {
    /// A loop with no thread and no epoll, driven by hand from the thread that makes it (the counterpart of
    /// swift-nio's `EmbeddedEventLoop`): `run()` runs the queued work and calls the handlers whose embedded
    /// sockets (`TCPSocket.embedded()`) are ready, and `advanceTime(by:)` moves its clock and fires the timers
    /// due. Its handlers are the real ones; only the sockets and the clock are in memory.
    ///
    /// `execute` may still be called from other threads (a store answering); the work runs at the next `run()`.
    public static func embedded(name: String = "embedded") throws(NetError) -> EventLoop {
        let loop = try EventLoop(name: name, embedded: true)
        loop.threadID.store(pthread_self(), ordering: .releasing)
        return loop
    }

    /// The embedded clock `delay` from now, saturating. Call on the loop's thread.
    func embeddedDeadline(after delay: Duration) -> UInt64 {
        let (sum, overflow) = local.value.embeddedNow.addingReportingOverflow(delay.clampedNanoseconds)
        return overflow ? UInt64.max : sum
    }

    /// Runs queued work and readiness until nothing more happens (at most `limit` rounds, so that a handler that
    /// never stops reading a level-triggered end of stream cannot hang a test).
    /// - Returns: how many rounds did something.
    @discardableResult
    public func run(limit: Int = 1000) -> Int {
        precondition(isEmbedded, "run() drives embedded loops only")
        preconditionInEventLoop()
        let state = local.value
        var rounds = 0
        while rounds < limit {
            var acted = false
            if queuedWorkCount > 0 {
                _ = runQueuedWork()
                acted = true
            }
            acted = fireDueEmbeddedTimers(state) || acted
            for id in state.registrations.keys.sorted() {
                guard let entry = state.registrations[id], let peer = entry.peer else { continue }
                let ready = peer.readiness.intersection(entry.interest)
                if ready.contains(.readable) {
                    entry.handler.readable()
                    acted = true
                }
                if ready.contains(.writable), let current = state.registrations[id] {
                    current.handler.writable()
                    acted = true
                }
            }
            if !acted { break }
            rounds += 1
        }
        return rounds
    }

    /// Ends an embedded loop as `shutdownGracefully` ends a real one: runs the work still queued, tells every
    /// handler still registered to hang up, and drops the timers (which, with the registrations, hold the
    /// handlers and, through them, the loop).
    public func stopEmbedded() {
        precondition(isEmbedded, "stopEmbedded ends embedded loops only")
        preconditionInEventLoop()
        finish(local.value)
    }

    /// Moves the embedded clock on by `duration`, then `run()`s (timers due by then fire).
    public func advanceTime(by duration: Duration) {
        precondition(isEmbedded, "advanceTime drives embedded loops only")
        preconditionInEventLoop()
        local.value.embeddedNow = embeddedDeadline(after: duration)
        run()
    }

    private func fireDueEmbeddedTimers(_ state: LoopState) -> Bool {
        var fired = false
        let mark = state.timers.sequenceMark
        while let entry = state.timers.popDue(now: state.embeddedNow, before: mark) {
            if entry.handle.claimFiring() {
                entry.work()
                fired = true
            }
        }
        return fired
    }
}

/// The in-memory far end of an embedded socket (`TCPSocket.embedded()`): a test writes here what the socket
/// reads, ends the stream, and takes what the socket wrote. `sendWindow` bounds what the socket's writes may
/// take until the test takes them, as a peer that stops reading fills a TCP window.
///
/// Sendable (its state behind a mutex) because a socket is, though an embedded loop touches it from one thread.
public final class EmbeddedPeer: Sendable {
    private struct State {
        var toSocket: [UInt8] = []
        var toSocketOffset = 0
        var ended = false
        var fromSocket: [UInt8] = []
        var window = Int.max
        var socketShutWrite = false
        var closed = false
    }

    private let state = Mutex(State())

    init() {}

    /// Bytes for the socket to read.
    public func write(_ bytes: some Sequence<UInt8>) {
        state.withLock { $0.toSocket.append(contentsOf: bytes) }
    }

    /// Ends the stream the socket reads (FIN): once it has read everything written, it reads end of stream.
    public func end() {
        state.withLock { $0.ended = true }
    }

    /// Takes every byte the socket has written so far, and opens the window by as much.
    public func read() -> [UInt8] {
        state.withLock { state in
            defer { state.fromSocket.removeAll() }
            if state.window != Int.max { state.window += state.fromSocket.count }
            return state.fromSocket
        }
    }

    /// How many more bytes the socket's writes may put here before they would block (`Int.max`: no limit).
    public var sendWindow: Int {
        get { state.withLock { $0.window } }
        set { state.withLock { $0.window = newValue } }
    }

    /// The socket shut down its sending side (`shutdownWrite`).
    public var socketShutWrite: Bool { state.withLock { $0.socketShutWrite } }

    /// The socket was closed.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// What the socket would be told by epoll now: readable with bytes to read or the end of stream, writable
    /// with room in the window.
    public var readiness: Interest {
        state.withLock { state in
            guard !state.closed else { return [] }
            var ready: Interest = []
            if state.toSocketOffset < state.toSocket.count || state.ended { ready.insert(.readable) }
            if state.window > 0, !state.socketShutWrite { ready.insert(.writable) }
            return ready
        }
    }

    func socketRead(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> TCPSocket.ReadResult {
        let result = state.withLock { state -> TCPSocket.ReadResult? in
            guard !state.closed else { return nil }
            let available = state.toSocket.count - state.toSocketOffset
            guard available > 0 else { return state.ended ? .eof : .wouldBlock }
            let count = min(available, buffer.count)
            let start = state.toSocketOffset
            state.toSocket.withUnsafeBytes { raw in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[start..<start + count]))
            }
            state.toSocketOffset += count
            if state.toSocketOffset == state.toSocket.count {
                state.toSocket.removeAll()
                state.toSocketOffset = 0
            }
            return .bytes(count)
        }
        guard let result else { throw NetError(errno: EBADF, operation: "read") }
        return result
    }

    func socketWrite(_ buffer: UnsafeRawBufferPointer) throws(NetError) -> TCPSocket.WriteResult {
        let result = state.withLock { state -> TCPSocket.WriteResult? in
            guard !state.closed, !state.socketShutWrite else { return nil }
            guard buffer.count > 0 else { return .wrote(0) }
            let count = min(buffer.count, state.window)
            guard count > 0 else { return .wouldBlock }
            state.fromSocket.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            if state.window != Int.max { state.window -= count }
            return .wrote(count)
        }
        guard let result else { throw NetError(errno: EPIPE, operation: "send") }
        return result
    }

    func socketShutdownWrite() throws(NetError) {
        try state.withLock { state throws(NetError) in
            guard !state.closed else { throw NetError(errno: EBADF, operation: "shutdown") }
            state.socketShutWrite = true
        }
    }

    func socketClose() {
        state.withLock { $0.closed = true }
    }
}
