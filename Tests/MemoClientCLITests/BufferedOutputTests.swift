import Glibc
import MemoClientCLI
import Synchronization
import Testing

@Suite("Client command line: buffered output")
struct BufferedOutputTests {
    @Test func aReaderThatWentAwayCallsTheHandlerOnceAndTheLibraryDoesNotExit() throws {
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        close(ends[0])
        defer { close(ends[1]) }
        let calls = Atomic(0)
        let output = BufferedOutput(fd: ends[1], onBrokenPipe: { calls.add(1, ordering: .relaxed) })
        output.line("first")
        output.flush()
        output.line("second")
        output.flush()
        // Still running here: the old stream called exit(0) from inside the library, which ended the test run.
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    @Test func linesReachTheDescriptorOnFlush() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let output = BufferedOutput(fd: ends[1])
        output.line("메모")
        output.write("two")
        output.flush()
        close(ends[1])
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64)
        while case let got = read(ends[0], &chunk, chunk.count), got > 0 { received += chunk[0..<got] }
        #expect(String(decoding: received, as: UTF8.self) == "메모\ntwo")
    }
}
