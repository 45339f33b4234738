import Glibc
import Testing

@testable import MemoNet

@Suite("Net: signal watcher")
struct NetSignalWatcherTests {
    @Test("a signal raised on the loop's thread reaches the handler there, through the signalfd")
    func signalDelivered() throws {
        let loop = try EventLoop.start(name: "net-test-signal")
        defer { loop.shutdownGracefully() }
        let received = NetBox<[Int32]>([])
        let delivered = NetSignal()
        let ready = NetSignal()
        let setupError = NetBox<String?>(nil)
        loop.execute {
            do {
                // SIGUSR2 rather than SIGTERM: the test process's other threads leave it unblocked, and raise()
                // directs it at this thread, which the watcher has blocked it on.
                let watcher = try SignalWatcher(signals: [SIGUSR2], eventLoop: loop) { signal in
                    received.update { $0.append(signal) }
                    #expect(loop.inEventLoop)
                    delivered.signal()
                }
                // The loop keeps the watcher (its handler) alive until it stops or the loop shuts down.
                _ = watcher
            } catch {
                setupError.update { $0 = "\(error)" }
            }
            ready.signal()
        }
        ready.wait()
        #expect(setupError.value == nil)
        loop.execute { raise(SIGUSR2) }
        delivered.wait()
        loop.execute { raise(SIGUSR2) }
        delivered.wait()
        #expect(received.value == [SIGUSR2, SIGUSR2])
    }
}
