import Foundation
import MemoTestSupport
import MemoWire
import Testing

@testable import memo_bench

/// memo-bench's request client per request: the batch written over in place must send the bytes each request
/// encoded afresh would, and every answer is still checked (its type and the request it answers).
@Suite("memo-bench request client: batch bytes and answer checks")
struct BenchRequestClientTests {
    /// Each request's frame as `Message.encode` writes it, one after the other.
    private func encoded(_ messages: [(Message, UInt32)]) -> [UInt8] {
        var writer = WireWriter()
        for (message, requestID) in messages { message.encode(into: &writer, requestID: requestID) }
        return writer.bytes
    }

    @Test func aBatchWrittenOverSendsTheBytesOfEachRequestEncodedAfresh() {
        var generator = SeededGenerator(seed: 30)
        let content = "a memo's content, ünïcode included"
        let makers: [(String, (UUID) -> Message)] = [
            ("create", { .create(id: $0, insertMicros: nil, content: content) }),
            ("get", { .get(id: $0) }),
            ("update", { .update(id: $0, expectedRevision: nil, content: content) }),
            ("list", { _ in .list }),
        ]
        for (name, make) in makers {
            var batch = RequestBatch(make(UUID()), count: 3)
            // Twice over, as each batch reuses the last one's bytes.
            for round in 0..<2 {
                var expected: [(Message, UInt32)] = []
                for slot in 0..<3 {
                    let id = UUID(uuid: withUnsafeBytes(of: (generator.next(), generator.next())) {
                        $0.load(as: uuid_t.self)
                    })
                    let requestID = UInt32(truncatingIfNeeded: generator.next())
                    batch.set(slot, requestID: requestID, id: id.uuid)
                    expected.append((make(id), requestID))
                }
                #expect(batch.bytes == encoded(expected), "\(name), round \(round)")
            }
        }
    }

    @Test func anAnswerToNoRequestInFlightOrASecondAnswerStopsTheRun() throws {
        var table = AnswerTable(answerType: Message.Kind.memo.rawValue)
        table.expect(firstID: 101, count: 2)
        let memo = Message.Kind.memo.rawValue
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        #expect(throws: AnswerFailure.self) { try table.answer(type: memo, requestID: 103, payload: none) }
        #expect(throws: AnswerFailure.self) { try table.answer(type: memo, requestID: 100, payload: none) }
        #expect(try table.answer(type: memo, requestID: 102, payload: none))
        #expect(throws: AnswerFailure.self) { try table.answer(type: memo, requestID: 102, payload: none) }
        #expect(table.outstanding == 1)
        #expect(try table.answer(type: memo, requestID: 101, payload: none))
        #expect(table.outstanding == 0)
        // The next batch: the last one's ids are no longer in flight.
        table.expect(firstID: 103, count: 2)
        #expect(throws: AnswerFailure.self) { try table.answer(type: memo, requestID: 101, payload: none) }
        #expect(table.outstanding == 2)
    }

    @Test func anAnswerOfAnotherTypeStopsTheRunAndAnErrorIsCounted() throws {
        var table = AnswerTable(answerType: Message.Kind.memo.rawValue)
        table.expect(firstID: 7, count: 3)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        #expect(throws: AnswerFailure.self) {
            try table.answer(type: Message.Kind.ok.rawValue, requestID: 7, payload: none)
        }
        #expect(try table.answer(type: Message.Kind.error.rawValue, requestID: 8, payload: none))
        #expect(table.errors == 1)
        #expect(table.outstanding == 2)
        let goingAway: [UInt8] = [0x01, 0xF8, 0, 0, 0, 0]
        let error = try goingAway.withUnsafeBytes { payload in
            try #require(throws: AnswerFailure.self) {
                try table.answer(type: Message.Kind.goingAway.rawValue, requestID: 0, payload: payload)
            }
        }
        #expect(error.description.contains("going-away (code 504)"))
    }

    @Test func aListIsAnsweredOnlyByItsLastChunk() throws {
        var table = AnswerTable(answerType: Message.Kind.memos.rawValue, chunked: true)
        table.expect(firstID: 1, count: 1)
        let type = Message.Kind.memos.rawValue
        let more: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0]
        let last: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0]
        #expect(try !more.withUnsafeBytes { try table.answer(type: type, requestID: 1, payload: $0) })
        #expect(table.outstanding == 1)
        #expect(try last.withUnsafeBytes { try table.answer(type: type, requestID: 1, payload: $0) })
        #expect(table.outstanding == 0)
    }

    @Test func framesAreCutFromTheReadBufferAndAPartialOneIsKept() throws {
        let frames = encoded([(.ok, 5), (.error(code: .lagging, message: "slow"), 6), (.ok, 7)])
        var buffer = Array(frames.dropLast(3))
        var seen: [(UInt8, UInt32, Int)] = []
        try takeFrames(&buffer) { seen.append(($0, $1, $2.count)) }
        #expect(seen.map(\.1) == [5, 6])
        #expect(seen.map(\.0) == [Message.Kind.ok.rawValue, Message.Kind.error.rawValue])
        #expect(seen[1].2 == 2 + 4 + 4)
        #expect(buffer == Array(frames[(frames.count - 9)..<(frames.count - 3)]))
        buffer += frames.suffix(3)
        seen.removeAll()
        try takeFrames(&buffer) { seen.append(($0, $1, $2.count)) }
        #expect(seen.map(\.1) == [7])
        #expect(buffer.isEmpty)
        var short: [UInt8] = [0, 0, 0, 4, 0x44, 0, 0, 0, 1]
        #expect(throws: AnswerFailure.self) { try takeFrames(&short) { _, _, _ in } }
    }

    @Test func percentilesBySelectionAreTheSortedRanks() {
        var generator = SeededGenerator(seed: 99)
        for count in [1, 2, 3, 10, 99, 100, 101, 1000, 4097] {
            // Many repeats, as latencies read once per read have.
            let values = (0..<count).map { _ in generator.next() % UInt64(max(1, count / 3)) * 1000 }
            let sorted = values.sorted()
            let (p50, p99) = latencyPercentiles(values)
            #expect(p50 == Double(sorted[min(count - 1, count / 2)]) / 1e6, "p50 of \(count)")
            #expect(p99 == Double(sorted[min(count - 1, Int((Double(count) * 0.99).rounded(.down)))]) / 1e6,
                    "p99 of \(count)")
        }
    }
}
