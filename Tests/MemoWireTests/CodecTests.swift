import Foundation
import MemoModel
import MemoTestSupport
import MemoWire
import Testing

/// One message of every kind, with values that exercise each field.
let sampleMessages: [Message] = {
    let id = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
    let memo = Memo(id: id, content: "안녕하세요\n둘째 줄 🎉", insertMicros: 1_795_000_000_123_456,
                    updateMicros: 1_795_000_100_000_000, revision: 42)
    let other = Memo(id: UUID(uuidString: "00000000-0000-4000-8000-0000000000FF")!, content: "", insertMicros: -5,
                     updateMicros: 0, revision: UInt64.max)
    return [
        .hello(minVersion: 1, maxVersion: 3, client: "memo-client/1"),
        .create(id: nil, insertMicros: nil, content: "plain"),
        .create(id: id, insertMicros: nil, content: "with id"),
        .create(id: id, insertMicros: 77, content: "with id and date"),
        .create(id: nil, insertMicros: Int64.min, content: ""),
        .get(id: id),
        .list,
        .update(id: id, expectedRevision: nil, content: "수정"),
        .update(id: id, expectedRevision: 41, content: "guarded"),
        .delete(id: id, expectedRevision: nil),
        .delete(id: id, expectedRevision: 0),
        .subscribe(after: nil),
        .subscribe(after: 0),
        .subscribe(after: 123_456_789),
        .unsubscribe(subscription: 9),
        .ping(nonce: 0xDEAD_BEEF),
        .status,
        .welcome(version: 1, revision: 42, maxFrameSize: 1 << 20, role: .readOnly, server: "memo-server"),
        .memo(memo),
        .memos(revision: 42, last: true, memos: [memo, other]),
        .memos(revision: 0, last: false, memos: []),
        .ok,
        .pong(nonce: 7),
        .statusReport(StatusReport(ready: true, fields: [])),
        .statusReport(StatusReport(ready: false, reason: "shutting down", fields: [
            StatusField("none", .none), StatusField("integer", .integer(.min)), StatusField("number", .number(-0.5)),
            StatusField("text", .text("가")),
        ])),
        .snapshot(revision: 42, last: false, memos: [other]),
        .subscribed(head: 42),
        .change(Change(revision: 43, kind: .created, memo: memo)),
        .change(Change(revision: 44, kind: .updated, memo: memo)),
        .change(Change(revision: 45, kind: .deleted, memo: other)),
        .historyGone(requested: 3, oldestAvailable: 10),
        .error(code: .conflict, message: "memo is at revision 44, not 41"),
        .error(code: ErrorCode(rawValue: 999), message: "a code from a newer server"),
        .goingAway(code: .shuttingDown, message: "server is shutting down"),
        // Last, so that the fuzz corpus's older seeds keep their names.
        .create(id: id, insertMicros: 77, updateMicros: 78, content: "with both dates"),
        .create(id: nil, insertMicros: nil, updateMicros: -1, content: "with an update date only"),
        // Version 2.
        .listPage(limit: 100, after: nil),
        .listPage(limit: 0, after: ListCursor(insertMicros: -1, id: id)),
        .page(revision: 42, last: true, more: true, memos: [memo, other]),
        .page(revision: 0, last: false, more: false, memos: []),
        // Version 3 (these messages are the same bytes in every version; memos gain authors only in version 3).
        .history(id: id, limit: 50, before: nil),
        .history(id: id, limit: 1, before: 41),
        .trash(limit: 20, before: nil),
        .restore(id: id, revision: 7, expectedRevision: nil),
        .restore(id: id, revision: nil, expectedRevision: 42),
        .versions(id: id, more: true, versions: [
            MemoVersion(id: id, revision: 42, kind: .restore, micros: 5, author: Author(name: "앨리스", serial: "1F"),
                        content: "한글\n"),
            MemoVersion(id: id, revision: 7, kind: .create, micros: 1, author: .none, content: ""),
        ]),
        .trashPage(more: false, entries: [TrashEntry(
            memo: Memo(id: id, content: "gone", insertMicros: 1, updateMicros: 9, revision: 43,
                       author: Author(name: "bob", serial: "2A")),
            revision: 43, deletedMicros: 9, deletedBy: Author(name: "bob", serial: "2A"))]),
    ]
}()

/// Decodes every frame in `chunks`, fed in that order.
func decodeAll(_ chunks: [[UInt8]], maxFrameSize: Int = WireProtocol.defaultMaxFrameSize) throws -> [Frame] {
    var decoder = FrameDecoder(maxFrameSize: maxFrameSize)
    var frames: [Frame] = []
    for chunk in chunks {
        decoder.append(chunk)
        while let frame = try decoder.next() { frames.append(frame) }
    }
    #expect(decoder.bufferedByteCount == 0)
    return frames
}

func decodeMessage(_ bytes: [UInt8]) throws(WireError) -> Message {
    var decoder = FrameDecoder()
    decoder.append(bytes)
    guard let frame = try decoder.next() else { throw .truncated(field: "frame") }
    return try Message(frame: frame)
}

@Suite("Codec: frames and messages")
struct CodecTests {
    @Test func everyKindOfMessageIsCovered() {
        #expect(Set(sampleMessages.map(\.kind)) == Set(Message.Kind.allCases))
    }

    @Test(arguments: sampleMessages)
    func everyMessageRoundTrips(message: Message) throws {
        let bytes = message.frame(requestID: 0x0102_0304)
        var decoder = FrameDecoder()
        decoder.append(bytes)
        let frame = try #require(try decoder.next())
        #expect(frame.requestID == 0x0102_0304)
        #expect(frame.type == message.kind.rawValue)
        #expect(try Message(frame: frame) == message)
        #expect(frame.bytes == bytes)
    }

    @Test func oneByteAtATimeAllAtOnceAndOneFramePerReadAgree() throws {
        let frames = sampleMessages.enumerated().map { $1.frame(requestID: UInt32($0)) }
        let stream = frames.flatMap { $0 }
        let allAtOnce = try decodeAll([stream])
        let byteByByte = try decodeAll(stream.map { [$0] })
        let perFrame = try decodeAll(frames)
        // Odd chunk sizes cut frames and length prefixes anywhere.
        let oddChunks = stride(from: 0, to: stream.count, by: 7).map { Array(stream[$0..<min($0 + 7, stream.count)]) }
        let odd = try decodeAll(oddChunks)
        #expect(allAtOnce.count == sampleMessages.count)
        #expect(byteByByte == allAtOnce)
        #expect(perFrame == allAtOnce)
        #expect(odd == allAtOnce)
        #expect(try allAtOnce.map { try Message(frame: $0) } == sampleMessages)
    }

    /// The server decodes payloads where they lie in the decoder's buffer: the same messages as the copying path,
    /// in the same order, with the same request ids.
    @Test func payloadsReadInPlaceDecodeAsCopiedFramesDo() throws {
        var decoder = FrameDecoder()
        decoder.append(sampleMessages.enumerated().flatMap { $1.frame(requestID: UInt32($0)) })
        var decoded: [Message] = []
        while let (type, requestID, payload) = try decoder.nextPayload() {
            var reader = payload
            #expect(requestID == UInt32(decoded.count))
            #expect(type == sampleMessages[decoded.count].kind.rawValue)
            decoded.append(try Message(type: type, payload: &reader))
        }
        #expect(decoded == sampleMessages)
        #expect(decoder.bufferedByteCount == 0)
    }

    /// A payload read in place ends where its frame ends, though the buffer goes on: a field that claims more
    /// bytes than its frame holds is an error even when the next frame's bytes would satisfy it.
    @Test func aPayloadReadInPlaceNeverReadsIntoTheNextFrame() throws {
        // A create whose content length says 40 in a frame that holds 4 bytes of content, then a frame of 64 bytes.
        var short = WireWriter()
        short.u8(0)
        short.u32(40)
        short.bytes += Array("abcd".utf8)
        let truncated = Frame(type: Message.Kind.create.rawValue, requestID: 1, payload: short.bytes).bytes
        let next = Message.create(id: nil, insertMicros: nil, content: String(repeating: "z", count: 64))
            .frame(requestID: 2)
        var decoder = FrameDecoder()
        decoder.append(truncated + next)
        var (type, _, payload) = try #require(try decoder.nextPayload())
        #expect(payload.remaining == short.bytes.count)
        #expect(throws: WireError.countTooLarge(field: "content length", count: 40)) {
            try Message(type: type, payload: &payload)
        }
        // The next frame is whole and untouched.
        (type, _, payload) = try #require(try decoder.nextPayload())
        #expect(try Message(type: type, payload: &payload) == Message(frame: try #require(
            try decodeAll([next]).first)))
        // A trailing byte inside the frame is still trailing, whatever follows the frame.
        var padded = Message.get(id: UUID()).frame(requestID: 3)
        padded[3] += 1
        padded.append(0)
        decoder.append(padded + next)
        (type, _, payload) = try #require(try decoder.nextPayload())
        #expect(throws: WireError.trailingBytes(count: 1)) { try Message(type: type, payload: &payload) }
    }

    @Test func aPartialFrameWaitsForMoreAndConsumesNothing() throws {
        let bytes = Message.get(id: UUID()).frame(requestID: 5)
        var decoder = FrameDecoder()
        decoder.append(bytes.dropLast())
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == bytes.count - 1)
        decoder.append([bytes.last!])
        #expect(try decoder.next()?.requestID == 5)
    }

    @Test func aLengthOverTheLimitIsRefusedFromTheFourLengthBytesAlone() {
        var decoder = FrameDecoder(maxFrameSize: 1 << 20)
        decoder.append([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: WireError.frameTooLarge(length: UInt32.max, limit: 1 << 20)) { try decoder.next() }
        var edge = FrameDecoder(maxFrameSize: 1 << 20)
        edge.append([0x00, 0x10, 0x00, 0x00])  // 1 MiB after the prefix: 4 bytes over
        #expect(throws: WireError.frameTooLarge(length: 1 << 20, limit: 1 << 20)) { try edge.next() }
        var fits = FrameDecoder(maxFrameSize: 1 << 20)
        fits.append([0x00, 0x0F, 0xFF, 0xFC])  // exactly the limit: waits for the body
        #expect(throws: Never.self) { try fits.next() }
    }

    @Test func lengthsTooShortForAHeaderAreRefused() {
        for length: UInt8 in [0, 1, 4] {
            var decoder = FrameDecoder()
            decoder.append([0, 0, 0, length, 0x01, 0, 0, 0, 0])
            #expect(throws: WireError.frameTooShort(length: UInt32(length))) { try decoder.next() }
        }
    }

    @Test func malformedMessagesGiveTypedErrors() {
        let id = UUID()
        func frame(_ type: UInt8, _ payload: [UInt8]) -> Frame { Frame(type: type, requestID: 1, payload: payload) }
        let cases: [(Frame, WireError)] = [
            (frame(0x00, []), .unknownMessageType(0x00)),
            (frame(0x3F, [1, 2]), .unknownMessageType(0x3F)),
            (frame(0x03, Array(id.bytes.prefix(10))), .truncated(field: "memo id")),
            (frame(0x09, [0, 0, 0]), .truncated(field: "nonce")),
            (frame(0x09, [0, 0, 0, 0, 0, 0, 0, 1, 0xAA]), .trailingBytes(count: 1)),
            (frame(0x04, [0]), .trailingBytes(count: 1)),
            (frame(0x02, [0, 0, 0, 0, 2, 0xC3, 0x28]), .invalidUTF8(field: "content")),
            (frame(0x02, [0, 0, 0, 0, 3, 0xED, 0xA0, 0x80]), .invalidUTF8(field: "content")),  // a surrogate
            (frame(0x02, [0, 0xFF, 0xFF, 0xFF, 0xFF]), .countTooLarge(field: "content length", count: 0xFFFF_FFFF)),
            (frame(0x02, [8]), .invalidValue(field: "create flags", value: 8)),
            (frame(0x02, [4, 0, 0]), .truncated(field: "update date")),
            (frame(0x07, [2]), .invalidValue(field: "subscribe mode", value: 2)),
            (frame(0x06, id.bytes + [7]), .invalidValue(field: "expected-revision flag", value: 7)),
            (frame(0x61, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0xFF]),
             .countTooLarge(field: "memo count", count: 0xFFFF_FFFF)),
            (frame(0x61, [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0]), .invalidValue(field: "chunk flags", value: 2)),
            (frame(0x63, [0, 0, 0, 0, 0, 0, 0, 1, 9] + id.bytes), .invalidValue(field: "change kind", value: 9)),
            (frame(0x41, [0, 1] + [UInt8](repeating: 0, count: 12) + [3]), .invalidValue(field: "role", value: 3)),
        ]
        for (frame, expected) in cases {
            #expect(throws: expected) { try Message(frame: frame) }
        }
    }

    @Test func errorsMapToProtocolCodes() {
        #expect(WireError.frameTooLarge(length: 9, limit: 8).code == .frameTooLarge)
        #expect(WireError.unknownMessageType(0).code == .unknownMessageType)
        #expect(WireError.invalidUTF8(field: "x").code == .invalidUTF8)
        #expect(WireError.trailingBytes(count: 1).code == .malformedFrame)
        #expect(ErrorCode(MemoError.notFound(UUID())) == .notFound)
        #expect(ErrorCode(MemoError.storageFull("x")) == .storageFull)
        #expect(ErrorCode.conflict.description == "201 conflict")
    }

    /// The reader's UTF-8 check (decode with repair, then compare the bytes) accepts exactly what the standard
    /// library's validating initialiser accepts, and gives back the same bytes.
    @Test func utf8ValidationAgreesWithTheStandardLibrary() {
        var cases: [[UInt8]] = [
            [], [0], Array("abc".utf8), Array("안녕하세요 🎉".utf8), Array("a\u{FFFD}b".utf8), [0xEF, 0xBF, 0xBD],
            [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xF0, 0x80, 0x80, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE], [0x80], [0xBF], [0xE2, 0x82],
            [0xF0, 0x9F, 0x8E], Array("가".decomposedStringWithCanonicalMapping.utf8), Array("가".utf8),
        ]
        // Random short strings over bytes that make every kind of sequence: ASCII, continuation, lead bytes.
        let alphabet: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE1,
                                 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
        var generator = SeededGenerator(seed: 0x07F8)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...6, using: &generator)
            cases.append((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
        }
        var accepted = 0
        for bytes in cases {
            let ours = WireReader.validUTF8([0x20] + bytes + [0x20], 1..<(bytes.count + 1)).map { Array($0.utf8) }
            let standard = String(validating: bytes, as: UTF8.self).map { Array($0.utf8) }
            #expect(ours == standard, "bytes \(bytes)")
            if ours != nil { accepted += 1; #expect(ours == bytes) }
        }
        #expect(accepted > 100 && accepted < cases.count)
    }

    @Test func randomBytesNeverCrashTheDecoders() {
        var generator = SeededGenerator(seed: 0x5EED)
        var decodedFrames = 0
        for _ in 0..<20_000 {
            let count = Int.random(in: 0..<64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Make many of them plausible frames so the message decoder is reached.
            if bytes.count >= 9, Bool.random(using: &generator) {
                let length = UInt32(bytes.count - 4)
                bytes[0] = 0; bytes[1] = 0; bytes[2] = UInt8(length >> 8); bytes[3] = UInt8(length & 0xFF)
                bytes[4] = Message.Kind.allCases.randomElement(using: &generator)!.rawValue
            }
            var decoder = FrameDecoder(maxFrameSize: 4096)
            decoder.append(bytes)
            while let frame = try? decoder.next() {
                decodedFrames += 1
                _ = try? Message(frame: frame)
            }
        }
        #expect(decodedFrames > 1000)
    }

    @Test func snapshotChunksFitTheFrameLimitAndKeepEveryMemoInOrder() throws {
        let memos = (0..<5_000).map { i in
            Memo(id: UUID(), content: String(repeating: "메모", count: i % 300), insertMicros: Int64(i),
                 updateMicros: Int64(i), revision: UInt64(i + 1))
        }
        let limit = 64 * 1024
        let chunks = Message.chunks(of: memos, revision: 5_000, maxFrameSize: limit, snapshot: true)
        #expect(chunks.count > 1)
        var joined: [Memo] = []
        for (index, chunk) in chunks.enumerated() {
            let bytes = chunk.frame(requestID: 1)
            #expect(bytes.count <= limit)
            guard case .snapshot(let revision, let last, let part) = try decodeMessage(bytes) else {
                Issue.record("not a snapshot chunk")
                return
            }
            #expect(revision == 5_000)
            #expect(last == (index == chunks.count - 1))
            joined += part
        }
        #expect(joined == memos)
        #expect(Message.chunks(of: [], revision: 0, snapshot: false) == [.memos(revision: 0, last: true, memos: [])])
    }

    /// The example in PROTOCOL.md, byte for byte.
    @Test func theProtocolDocumentsExampleIsExact() {
        let id = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
        let create = Message.create(id: id, insertMicros: nil, content: "안녕").frame(requestID: 7)
        #expect(hex(create) == """
            00000020 02000000 07010f1e 2d3c4b5a 69788796 a5b4c3d2 e1f00000 0006ec95 88eb8595
            """)
        let memo = Memo(id: id, content: "안녕", insertMicros: 1_795_000_000_000_000,
                        updateMicros: 1_795_000_000_000_000, revision: 1)
        #expect(hex(Message.memo(memo).frame(requestID: 7)) == """
            00000037 42000000 070f1e2d 3c4b5a69 788796a5 b4c3d2e1 f0000000 00000000 01000660 \
            8b015f30 00000660 8b015f30 00000000 06ec9588 eb8595
            """)
        let restore = Message.create(
            id: id, insertMicros: 1_795_000_000_000_000, updateMicros: 1_795_000_060_000_000, content: "안녕")
        #expect(hex(restore.frame(requestID: 9)) == """
            00000030 02000000 09070f1e 2d3c4b5a 69788796 a5b4c3d2 e1f00006 608b015f 30000006 \
            608b04f2 b7000000 0006ec95 88eb8595
            """)
        #expect(hex(Message.error(code: .notFound, message: "no").frame(requestID: 8)) ==
            "0000000d 7e000000 0800c800 0000026e 6f")
        #expect(hex(Message.status.frame(requestID: 5)) == "00000005 0a000000 05")
        let report = StatusReport(ready: true, fields: [
            StatusField("revision.head", .integer(42)), StatusField("uptime.seconds", .number(1.5)),
            StatusField("store.kind", .text("sqlite")), StatusField("postgres.database_head", .none),
        ])
        #expect(hex(Message.statusReport(report).frame(requestID: 5)) == """
            00000075 46000000 05010000 00000004 0000000d 72657669 73696f6e 2e686561 64010000 00000000 \
            002a0000 000e7570 74696d65 2e736563 6f6e6473 023ff800 00000000 00000000 0a73746f 72652e6b \
            696e6403 00000006 73716c69 74650000 0016706f 73746772 65732e64 61746162 6173655f 68656164 \
            00
            """)
        let cursor = ListCursor(insertMicros: 1_795_000_000_000_000, id: id)
        #expect(hex(Message.listPage(limit: 2, after: cursor).frame(requestID: 10)) == """
            00000022 0b000000 0a000000 02010006 608b015f 30000f1e 2d3c4b5a 69788796 a5b4c3d2 e1f0
            """)
        #expect(hex(Message.page(revision: 42, last: true, more: false, memos: []).frame(requestID: 10))
            == "00000012 47000000 0a000000 00000000 2a010000 0000")
        let notReady = StatusReport(ready: false, reason: "shutting down", fields: [])
        #expect(hex(Message.statusReport(notReady).frame(requestID: 6)) == """
            00000019 46000000 06000000 000d7368 75747469 6e672064 6f776e00 00
            """)
    }

    @Test func aStatusReportSurvivesTheWireAndAnUndefinedValueTypeIsRefused() throws {
        let report = StatusReport(ready: false, reason: "feed lagging 7.2 s", fields: [
            StatusField("a", .none), StatusField("b", .integer(-3)), StatusField("c", .number(0.25)),
            StatusField("d", .text("안녕")),
        ])
        let frame = Message.statusReport(report).frame(requestID: 1)
        var decoder = FrameDecoder()
        decoder.append(frame)
        let decoded = try Message(frame: try #require(try decoder.next()))
        #expect(decoded == .statusReport(report))
        #expect(report["d"] == .text("안녕"))
        #expect(report["e"] == nil)
        // The value type byte of field "a" (after u8 ready, the reason, u16 count and the key "a") set to 9.
        var payload = Array(frame[9...])
        let typeOffset = 1 + 4 + "feed lagging 7.2 s".utf8.count + 2 + 4 + 1
        #expect(payload[typeOffset] == 0)
        payload[typeOffset] = 9
        #expect(throws: WireError.invalidValue(field: "value type", value: 9)) {
            try Message(frame: Frame(type: 0x46, requestID: 1, payload: payload))
        }
        // A count that cannot fit in what is left is refused before anything is made.
        let huge: [UInt8] = [1, 0, 0, 0, 0, 0xff, 0xff]
        #expect(throws: WireError.countTooLarge(field: "field count", count: 65535)) {
            try Message(frame: Frame(type: 0x46, requestID: 1, payload: huge))
        }
    }
}


/// The memo answer's frame (`WireWriter.memoFrame`: every write's and get's answer, written straight into the
/// connection's queue) against the same frame built field by field with the writer's general calls, in each protocol
/// version: the content read in place (small and large native strings, non-ASCII, empty) must give the same bytes.
@Suite("Codec: the memo answer's frame")
struct MemoFrameTests {
    static let contents: [String] = [
        "", "a", "fifteen bytes!!", "sixteen bytes!!!", String(repeating: "x", count: 64), "안녕하세요 🎉",
        String(repeating: "m\u{00e9}", count: 3000),
        // A string made from a slice of another: native, but not the literal's storage.
        String("prefix: the tail of a longer line".split(separator: ":")[1]),
    ]

    @Test(arguments: [UInt16(1), 2, 3])
    func aMemoFrameIsItsHeaderThenTheMemoFieldByField(version: UInt16) throws {
        let authors = version >= WireProtocol.authorsVersion
        for content in Self.contents {
            let memo = Memo(
                id: UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!, content: content,
                insertMicros: 1_795_000_000_123_456, updateMicros: -7, revision: 0x0102_0304_0506_0708,
                author: Author(name: "writer-\u{00e9}", serial: "0123456789abcdef0123456789abcdef"))
            var body = WireWriter()
            body.authors = authors
            body.memo(memo)
            var expected = WireWriter()
            expected.u32(UInt32(WireProtocol.headerSize - 4 + body.bytes.count))
            expected.u8(Message.Kind.memo.rawValue)
            expected.u32(0xA1B2_C3D4)
            expected.bytes += body.bytes

            var writer = WireWriter(capacity: 0)
            writer.authors = authors
            writer.bytes = [0xEE]  // written after what the array already holds
            writer.memoFrame(memo, type: Message.Kind.memo.rawValue, requestID: 0xA1B2_C3D4)
            #expect(writer.bytes == [0xEE] + expected.bytes, "version \(version), \(content.utf8.count) bytes")

            var decoder = FrameDecoder()
            decoder.append(Array(writer.bytes.dropFirst()))
            let frame = try #require(try decoder.next())
            let decoded = try Message(frame: frame, version: version)
            var want = memo
            if !authors { want.author = .none }
            #expect(decoded == .memo(want))
            #expect(Array(content.utf8) == Array(memo.content.utf8))
        }
    }
}
