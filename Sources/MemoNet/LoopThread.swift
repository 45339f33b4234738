import Glibc

/// A joinable POSIX thread running one closure, named for `top` and debuggers.
final class LoopThread: Sendable {
    private final class Start {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    private let handle: pthread_t

    private init(handle: pthread_t) {
        self.handle = handle
    }

    /// Starts a thread that runs `body`. It inherits the caller's signal mask, which is how `SignalWatcher`'s
    /// blocked signals reach every loop thread.
    static func spawn(name: String, _ body: @escaping @Sendable () -> Void) -> LoopThread {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            // The kernel keeps 15 bytes of a thread name.
            LinuxAPI.setThreadName(pthread_self(), String(start.name.utf8.prefix(15))!)
            start.body()
            return nil
        }, start)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            fatalError("pthread_create: \(String(cString: strerror(status)))")
        }
        return LoopThread(handle: handle)
    }

    /// True on this thread.
    var isCurrent: Bool {
        pthread_equal(pthread_self(), handle) != 0
    }

    /// Waits for the thread to end. Call once, never from the thread itself.
    func join() {
        precondition(!isCurrent, "a thread cannot join itself")
        let status = pthread_join(handle, nil)
        precondition(status == 0, "pthread_join: \(String(cString: strerror(status)))")
    }
}
