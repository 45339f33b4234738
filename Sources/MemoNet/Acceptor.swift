/// Accepts connections from a listener on one event loop and hands each to a closure.
///
/// When the process runs out of descriptors (EMFILE, ENFILE, ...), the acceptor reports the error, stops
/// watching the listener for `backoff`, then tries again, instead of spinning on the still-queued connection.
/// Touched only on its loop's thread.
public final class Acceptor: EventHandler {
    /// The listening socket.
    public let listener: ListeningSocket
    /// The loop that watches the listener.
    public let eventLoop: EventLoop
    private let onAccept: (ListeningSocket.Accepted) -> Void
    private let onError: (NetError) -> Void
    private let backoff: Duration
    private let batch: Int
    private var registration: Registration?
    private var resumeTimer: TimerHandle?

    /// Starts watching `listener` on `eventLoop`. Call on the loop's thread.
    /// - Parameters:
    ///   - backoff: How long to pause after running out of descriptors.
    ///   - batch: At most this many connections per wake-up, so a burst cannot starve other descriptors.
    ///   - onError: Told of every error; after one that is not resource exhaustion, accepting stops.
    ///   - onAccept: Given each connection, on the loop's thread.
    /// - Throws: `NetError` when the listener cannot be registered.
    public init(
        listener: ListeningSocket,
        eventLoop: EventLoop,
        backoff: Duration = .milliseconds(100),
        batch: Int = 64,
        onError: @escaping (NetError) -> Void,
        onAccept: @escaping (ListeningSocket.Accepted) -> Void
    ) throws(NetError) {
        self.listener = listener
        self.eventLoop = eventLoop
        self.backoff = backoff
        self.batch = batch
        self.onError = onError
        self.onAccept = onAccept
        registration = try eventLoop.register(
            fileDescriptor: listener.fileDescriptor, interest: .readable, handler: self
        )
    }

    public func readable() {
        for _ in 0..<batch {
            do {
                guard let accepted = try listener.accept() else { return }
                onAccept(accepted)
            } catch {
                onError(error)
                if error.isResourceExhaustion {
                    pause()
                } else {
                    stop()
                }
                return
            }
        }
    }

    /// A listener does not hang up by itself; this comes from the loop shutting down.
    public func hangup() {
        stop()
    }

    /// Stops accepting and closes the listener. Call on the loop's thread.
    public func stop() {
        resumeTimer?.cancel()
        resumeTimer = nil
        if let registration {
            eventLoop.deregister(registration)
            self.registration = nil
            listener.close()
        }
    }

    private func pause() {
        guard let registration, resumeTimer == nil else { return }
        do {
            try eventLoop.setInterest(.none, for: registration)
        } catch {
            onError(error)
            stop()
            return
        }
        let this = LoopBound(self, eventLoop: eventLoop)
        resumeTimer = eventLoop.schedule(after: backoff) {
            this.value.resume()
        }
    }

    private func resume() {
        resumeTimer = nil
        guard let registration else { return }
        do {
            try eventLoop.setInterest(.readable, for: registration)
        } catch {
            onError(error)
            stop()
        }
    }
}
