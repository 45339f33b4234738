import Foundation
import Glibc
import Testing

@testable import MemoNet

@Suite("Net: event loop")
struct NetEventLoopTests {
    @Test("work executed from many threads runs exactly once each, on the loop's thread")
    func executeFromManyThreads() throws {
        let loop = try EventLoop.start(name: "net-test-exec")
        defer { loop.shutdownGracefully() }
        let threads = 8, perThread = 2_000, total = threads * perThread
        let seen = NetBox((runs: [Int](repeating: 0, count: total), count: 0))
        let offLoop = NetBox(0)
        let done = NetSignal()
        #expect(!loop.inEventLoop)
        let senders = (0..<threads).map { thread in
            Thread {
                for index in 0..<perThread {
                    loop.execute {
                        if !loop.inEventLoop { offLoop.update { $0 += 1 } }
                        let finished = seen.update { seen in
                            seen.runs[thread * perThread + index] += 1
                            seen.count += 1
                            return seen.count == total
                        }
                        if finished { done.signal() }
                    }
                }
            }
        }
        senders.forEach { $0.start() }
        done.wait()
        // Anything run twice would have been queued before the last first run; one more round trip drains it.
        let drained = NetSignal()
        loop.execute { drained.signal() }
        drained.wait()
        #expect(seen.value.runs.allSatisfy { $0 == 1 })
        #expect(seen.value.count == total)
        #expect(offLoop.value == 0)
    }

    @Test("timers fire in deadline order, and cancelled timers never fire")
    func timersOrderAndCancel() throws {
        let loop = try EventLoop.start(name: "net-test-timer")
        defer { loop.shutdownGracefully() }
        let fired = NetBox<[Int]>([])
        let done = NetSignal()
        let cancelledReport = NetBox<[Bool]>([])
        loop.execute {
            // Scheduled out of order; even numbers get cancelled.
            let delays = [7, 3, 9, 1, 5, 8, 2, 6, 4, 0]  // 10 ms apart: robust to a busy machine
            var handles: [Int: TimerHandle] = [:]
            for delay in delays {
                handles[delay] = loop.schedule(after: .milliseconds(10 * delay)) {
                    fired.update { $0.append(delay) }
                }
            }
            // Two timers with the same deadline fire in scheduling order.
            let same = Duration.milliseconds(25)
            loop.schedule(after: same) { fired.update { $0.append(100) } }
            loop.schedule(after: same) { fired.update { $0.append(101) } }
            let results = stride(from: 0, to: 10, by: 2).map { handles[$0]!.cancel() }
            cancelledReport.update { $0 = results + [handles[0]!.cancel()] }
            loop.schedule(after: .milliseconds(150)) { done.signal() }
        }
        done.wait()
        #expect(cancelledReport.value == [true, true, true, true, true, false], "a second cancel reports false")
        let order = fired.value
        #expect(order.filter { $0 < 100 } == [1, 3, 5, 7, 9])
        let first = try #require(order.firstIndex(of: 100))
        #expect(order.firstIndex(of: 101) == first + 1)
        #expect(order.firstIndex(of: 1)! < first && first < order.firstIndex(of: 3)!)
    }

    @Test("a timer scheduled and cancelled from another thread does not fire; one not cancelled does")
    func timersFromOtherThreads() throws {
        let loop = try EventLoop.start(name: "net-test-timer2")
        defer { loop.shutdownGracefully() }
        let fired = NetBox<[String]>([])
        let done = NetSignal()
        let cancelled = loop.schedule(after: .milliseconds(20)) { fired.update { $0.append("cancelled") } }
        #expect(cancelled.cancel())
        #expect(cancelled.isCancelled)
        let start = ContinuousClock.now
        loop.schedule(after: .milliseconds(40)) {
            fired.update { $0.append("kept") }
            done.signal()
        }
        done.wait()
        #expect(ContinuousClock.now - start >= .milliseconds(40), "a timer never fires early")
        #expect(fired.value == ["kept"])
    }

    @Test("ten thousand timers, most cancelled, fire only the survivors, in order")
    func manyTimers() throws {
        let loop = try EventLoop.start(name: "net-test-timer3")
        defer { loop.shutdownGracefully() }
        let fired = NetBox<[Int]>([])
        let done = NetSignal()
        loop.execute {
            var handles: [TimerHandle] = []
            for index in 0..<10_000 {
                handles.append(loop.schedule(after: .milliseconds(10 + index % 50)) {
                    fired.update { $0.append(index) }
                })
            }
            for (index, handle) in handles.enumerated() where index % 100 != 0 {
                handle.cancel()
            }
            loop.schedule(after: .milliseconds(100)) { done.signal() }
        }
        done.wait()
        let order = fired.value
        #expect(order.count == 100)
        #expect(order.allSatisfy { $0 % 100 == 0 })
        let deadlines = order.map { 10 + $0 % 50 }
        #expect(deadlines == deadlines.sorted())
    }

    @Test("a group hands out its loops round-robin and each runs on its own thread")
    func groupRoundRobin() throws {
        let group = try EventLoopGroup(threads: 2)
        defer { group.shutdownGracefully() }
        let picks = (0..<4).map { _ in group.next() }
        #expect(picks[0] === group.loops[0] || picks[0] === group.loops[1])
        #expect(picks[0] === picks[2] && picks[1] === picks[3] && picks[0] !== picks[1])
        let threads = NetBox<[UInt]>([])
        let done = NetSignal()
        for loop in group.loops {
            loop.execute {
                threads.update { $0.append(UInt(pthread_self())) }
                done.signal()
            }
        }
        done.wait(count: 2)
        #expect(Set(threads.value).count == 2)
    }

    @Test("shutdown runs work queued before it, then hangs up remaining handlers, then drops later work")
    func shutdownRunsQueuedWorkAndHangsUp() throws {
        let loop = try EventLoop.start(name: "net-test-stop")
        let log = NetBox<[String]>([])
        let registered = NetSignal()
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        let readEnd = pipeEnds[0], writeEnd = pipeEnds[1]
        defer { close(readEnd); close(writeEnd) }
        loop.execute {
            let handler = RecordingHandler(log: log)
            handler.registration = try? loop.register(fileDescriptor: readEnd, interest: .readable, handler: handler)
            registered.signal()
        }
        registered.wait()
        loop.execute { log.update { $0.append("queued") } }
        loop.shutdownGracefully()
        loop.execute { log.update { $0.append("late") } }
        #expect(log.value == ["queued", "hangup"])
    }
}

/// Records `hangup()`; touched only on its loop's thread.
private final class RecordingHandler: EventHandler {
    let log: NetBox<[String]>
    var registration: Registration?

    init(log: NetBox<[String]>) {
        self.log = log
    }

    func hangup() {
        log.update { $0.append("hangup") }
    }
}
