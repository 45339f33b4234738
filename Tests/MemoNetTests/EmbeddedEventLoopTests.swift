import Dispatch
import MemoNet
import Synchronization
import Testing

/// A handler that counts what the loop calls.
private final class CountingHandler: EventHandler {
    var reads = 0
    var writes = 0
    let socket: TCPSocket
    var buffer = [UInt8](repeating: 0, count: 64)
    var read: [UInt8] = []
    var ended = false

    init(socket: TCPSocket) { self.socket = socket }

    func readable() {
        reads += 1
        switch try? buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) {
        case .bytes(let count): read += buffer[..<count]
        case .eof: ended = true
        default: break
        }
    }

    func writable() { writes += 1 }
}

@Suite struct EmbeddedEventLoopTests {
    @Test func timersFireOnlyWhenTheClockIsMovedAndInDeadlineOrder() throws {
        let loop = try EventLoop.embedded()
        let fired = Mutex<[Int]>([])
        loop.schedule(after: .seconds(5)) { fired.withLock { $0.append(5) } }
        loop.schedule(after: .seconds(2)) { fired.withLock { $0.append(2) } }
        let cancelled = loop.schedule(after: .seconds(3)) { fired.withLock { $0.append(3) } }
        loop.run()
        #expect(fired.withLock { $0 }.isEmpty)
        loop.advanceTime(by: .seconds(2))
        #expect(fired.withLock { $0 } == [2])
        #expect(cancelled.cancel())
        loop.advanceTime(by: .milliseconds(2999))
        #expect(fired.withLock { $0 } == [2])
        loop.advanceTime(by: .milliseconds(1))
        #expect(fired.withLock { $0 } == [2, 5])
    }

    @Test func anEmbeddedSocketIsReadableWithBytesOrItsEndAndWritableWithRoomInItsWindow() throws {
        let loop = try EventLoop.embedded()
        let (socket, peer) = TCPSocket.embedded()
        let handler = CountingHandler(socket: socket)
        let registration = try loop.register(socket: socket, interest: .readable, handler: handler)
        loop.run()
        #expect(handler.reads == 0)
        peer.write(Array("hello".utf8))
        loop.run()
        #expect(handler.read == Array("hello".utf8))
        // Writable is reported only when asked for, and only with room in the window.
        #expect(handler.writes == 0)
        peer.sendWindow = 0
        try loop.setInterest(.writable, for: registration)
        loop.run()
        #expect(handler.writes == 0)
        #expect(try socket.write(UnsafeRawBufferPointer(start: nil, count: 0)) == .wrote(0))
        #expect(try [UInt8](repeating: 0, count: 3).withUnsafeBytes { try socket.write($0) } == .wouldBlock)
        peer.sendWindow = 2
        loop.run(limit: 1)
        #expect(handler.writes == 1)
        #expect(try [UInt8](repeating: 7, count: 3).withUnsafeBytes { try socket.write($0) } == .wrote(2))
        #expect(peer.read() == [7, 7])
        try loop.setInterest(.readable, for: registration)
        peer.end()
        loop.run(limit: 1)
        #expect(handler.ended)
        loop.deregister(registration)
        socket.close()
        loop.stopEmbedded()
        #expect(peer.isClosed)
        #expect(socket.isClosed)
    }

    @Test func stoppingHangsUpTheHandlersStillRegisteredAndDropsTheTimers() throws {
        let loop = try EventLoop.embedded()
        let (socket, _) = TCPSocket.embedded()
        final class HangupHandler: EventHandler {
            var hungUp = false
            func hangup() { hungUp = true }
        }
        let handler = HangupHandler()
        _ = try loop.register(socket: socket, interest: .readable, handler: handler)
        let fired = Mutex(false)
        loop.schedule(after: .seconds(1)) { fired.withLock { $0 = true } }
        loop.stopEmbedded()
        #expect(handler.hungUp)
        #expect(loop.registrationCount == 0)
        #expect(loop.pendingTimerCount == 0)
        #expect(!fired.withLock { $0 })
    }

    @Test func workQueuedFromAnotherThreadRunsAtTheNextRun() throws {
        let loop = try EventLoop.embedded()
        let ran = Mutex(false)
        let queued = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            loop.execute { ran.withLock { $0 = true } }
            queued.signal()
        }
        queued.wait()
        #expect(!ran.withLock { $0 })
        loop.run()
        #expect(ran.withLock { $0 })
    }
}
