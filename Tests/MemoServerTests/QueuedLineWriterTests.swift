import Dispatch
import Foundation
import MemoDiagnostics
@testable import MemoServer
import MemoTestSupport
import Testing

@Suite("The server's log writer: a reader that stops reading holds no thread that serves")
struct QueuedLineWriterTests {
    /// Numbered lines of about 100 bytes.
    static func line(_ number: Int) -> String {
        "line \(number) " + String(repeating: "x", count: 90) + "\n"
    }

    /// Everything the pipe's read end gives until its write end is closed: read on a thread of its own while `then`
    /// runs (it writes the rest and closes the write end), so that the writer is never held by a full pipe.
    static func drain(_ ends: [Int32], then: () -> Void) -> String {
        let read = Recorder<Data>()
        let done = DispatchSemaphore(value: 0)
        let readEnd = ends[0]
        Thread.detachNewThread {
            read.record(FileHandle(fileDescriptor: readEnd).readDataToEndOfFile())
            done.signal()
        }
        then()
        close(ends[1])
        #expect(done.wait(timeout: .now() + 10) == .success)
        return String(decoding: read.values.first ?? Data(), as: UTF8.self)
    }

    @Test func linesPastTheCapacityAreDroppedNotWaitedForAndCountedInTheirPlaceOnceTheReaderReads() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let writer = QueuedLineWriter(fd: ends[1], capacity: 4_096, name: "test-log")
        defer { writer.stop() }
        // 2,000 lines of 100 bytes: the pipe (64 KiB) and the queue (4 KiB) take a few hundred; nobody reads.
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for number in 0..<2_000 {
                writer.write(Self.line(number)) { dropped in "dropped \(dropped)\n" }
            }
            finished.signal()
        }
        // Before: each write waited for the reader, so this never finished while the pipe was full.
        #expect(finished.wait(timeout: .now() + 10) == .success, "a log write waited for a reader that does not read")

        // The reader reads again: every line kept, in order, each run of dropped lines counted in its place, and
        // then what follows.
        let text = Self.drain(ends) {
            #expect(writer.flush(until: .now() + 10))
            writer.write("after\n") { dropped in "dropped \(dropped)\n" }
            #expect(writer.flush(until: .now() + 10))
        }
        let lines = text.split(separator: "\n").map(String.init)

        var accounted = 0
        var kept = 0
        var notices = 0
        for line in lines.dropLast() {
            let words = line.split(separator: " ")
            if words.first == "line" {
                #expect(Int(words[1]) == accounted, "\(line) where line \(accounted) was due")
                accounted += 1
                kept += 1
            } else {
                #expect(words.first == "dropped", "\(line)")
                accounted += Int(words.last ?? "") ?? 0
                notices += 1
            }
        }
        #expect(accounted == 2_000)
        #expect(notices > 0 && kept > 0 && kept < 2_000, "\(kept) lines kept, \(notices) notices")
        #expect(lines.last == "after")
    }

    @Test func theDroppedLinesNoticeIsARecordInTheLogsOwnFormat() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let writer = QueuedLineWriter(fd: ends[1], capacity: 4_096, name: "test-log")
        defer { writer.stop() }
        let log = ServerLog.lines(to: writer, format: .json, level: .info)
        for number in 0..<2_000 {
            log(.info, "open", [("conn", "\(number)")], "open conn=\(number) " + String(repeating: "x", count: 60))
        }
        let text = Self.drain(ends) { #expect(writer.flush(until: .now() + 10)) }
        let objects = try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
        }
        let notices = objects.filter { $0["event"] as? String == "log_dropped" }
        #expect(!notices.isEmpty)
        #expect(notices.allSatisfy { $0["level"] as? String == "warn" && Int($0["lines"] as? String ?? "") != nil })
        let kept = objects.count - notices.count
        let dropped = notices.reduce(0) { $0 + (Int($1["lines"] as? String ?? "") ?? 0) }
        #expect(kept + dropped == 2_000)
    }

    @Test func flushWaitsForTheLinesQueuedAndGivesUpAtItsDeadlineWhenNobodyReads() throws {
        // The writer's last write fails with EPIPE when the test closes the read end: an error, not a signal.
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let writer = QueuedLineWriter(fd: ends[1], name: "test-log")
        defer {
            // The read end first, so that the writer's blocked write fails (EPIPE); the write end only once its
            // thread has ended: a number closed under a writer still running is reused by the next pipe made.
            close(ends[0])
            writer.stop()
            close(ends[1])
        }
        writer.write("first\n") { _ in "" }
        #expect(writer.flush(until: .now() + 10))
        #expect(String(decoding: FileHandle(fileDescriptor: ends[0]).availableData, as: UTF8.self) == "first\n")
        // 100 KiB more than the pipe holds: the flush ends at its deadline, not when a reader comes.
        for number in 0..<1_700 { writer.write(Self.line(number)) { _ in "" } }
        let started = DispatchTime.now()
        #expect(!writer.flush(until: .now() + .milliseconds(300)))
        #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds < 5_000_000_000)
    }
}
