import Foundation
import Glibc
import MemoSystem
import Testing

@Suite("System: the shared write loop")
struct FileDescriptorTests {
    /// A pipe; the caller closes what it keeps.
    private func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    @Test func aNonBlockingPipeThatFillsUpStillGetsEveryByteInOrder() throws {
        let (reader, writer) = try makePipe()
        defer { close(reader) }
        _ = fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK)
        // Four times a pipe's default capacity (64 KiB): the writer meets EAGAIN until the reader drains it.
        let bytes = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let received = Thread.detachedRead(reader, count: bytes.count)
        try FileDescriptor.writeAll(writer, bytes)
        close(writer)
        #expect(received.wait() == bytes)
    }

    @Test func aReaderThatWentAwayIsEPIPENotASignal() throws {
        signal(SIGPIPE, SIG_IGN)
        let (reader, writer) = try makePipe()
        defer { close(writer) }
        close(reader)
        #expect(throws: WriteFailure(code: EPIPE)) { try FileDescriptor.writeAll(writer, "lost\n") }
    }

    @Test func anEmptyWriteWritesNothingAndSucceeds() throws {
        let (reader, writer) = try makePipe()
        defer { close(reader) }
        try FileDescriptor.writeAll(writer, [UInt8]())
        close(writer)
        var byte: UInt8 = 0
        #expect(read(reader, &byte, 1) == 0)
    }
}

/// Bytes read on a thread of their own until `count` arrived or the pipe ended.
private final class PendingRead: @unchecked Sendable {
    // Unchecked: `bytes` is written by the reading thread before `done` is signalled and read only after.
    var bytes: [UInt8] = []
    let done = DispatchSemaphore(value: 0)

    func wait() -> [UInt8] {
        _ = done.wait(timeout: .now() + 30)
        return bytes
    }
}

extension Thread {
    fileprivate static func detachedRead(_ fd: Int32, count: Int) -> PendingRead {
        let pending = PendingRead()
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while pending.bytes.count < count {
                let got = read(fd, &chunk, chunk.count)
                if got < 0, errno == EINTR { continue }
                if got <= 0 { break }
                pending.bytes.append(contentsOf: chunk[0..<got])
            }
            pending.done.signal()
        }
        return pending
    }
}
