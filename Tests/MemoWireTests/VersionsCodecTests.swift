import Foundation
import MemoModel
import MemoWire
import Testing

@Suite("Protocol version 3 codec: authors in memos, the update flags byte, history, trash and restore")
struct VersionsCodecTests {
    static let id = UUID(uuidString: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!
    static let date: Int64 = 1_795_000_000_000_000
    static let alice = Author(name: "alice", serial: "1F")

    private func hex(_ message: Message, _ requestID: UInt32) -> String {
        message.frame(requestID: requestID, version: 3).map { String(format: "%02x", $0) }.joined()
    }

    /// The dumps of PROTOCOL.md's *Versions*, byte for byte (spaces and notes removed).
    @Test func theVersionsSectionsDumpsAreExact() throws {
        let memo = Memo(id: Self.id, content: "hi", insertMicros: Self.date, updateMicros: Self.date + 2_000_000,
                        revision: 44, author: Self.alice)
        let version = MemoVersion(id: Self.id, revision: 42, kind: .update, micros: Self.date, author: Self.alice,
                                  content: "hi")
        let bob = Author(name: "bob", serial: "2A")
        let entry = TrashEntry(
            memo: Memo(id: Self.id, content: "hi", insertMicros: Self.date, updateMicros: Self.date + 1_000_000,
                       revision: 43, author: bob),
            revision: 43, deletedMicros: Self.date + 1_000_000, deletedBy: bob)
        let cases: [(Message, UInt32, String)] = [
            (.restore(id: Self.id, revision: 42, expectedRevision: 43), 13,
             "000000270e0000000d0f1e2d3c4b5a69788796a5b4c3d2e1f001000000000000002a01000000000000002b"),
            (.memo(memo), 13,
             "00000042420000000d0f1e2d3c4b5a69788796a5b4c3d2e1f0000000000000002c0006608b015f30000006608b017db480"
                + "000000026869" + "00000005616c696365" + "000000023146"),
            (.update(id: Self.id, expectedRevision: 44, content: "hi", merge: true), 14,
             "00000025050000000e0f1e2d3c4b5a69788796a5b4c3d2e1f001000000000000002c0000000268690" + "1"),
            (.history(id: Self.id, limit: 2, before: nil), 11,
             "0000001a0c0000000b0f1e2d3c4b5a69788796a5b4c3d2e1f00000000200"),
            (.versions(id: Self.id, more: true, versions: [version]), 11,
             "00000040480000000b0f1e2d3c4b5a69788796a5b4c3d2e1f00100000001000000000000002a020006608b015f3000"
                + "00000005616c696365000000023146000000026869"),
            (.trash(limit: 10, before: 44), 12, "000000120d0000000c0000000a01000000000000002c"),
            (.trashPage(more: false, entries: [entry]), 12,
             "00000045490000000c0000000001000000000000002b0006608b016e724000000003626f62000000023241"
                + "0f1e2d3c4b5a69788796a5b4c3d2e1f00006608b015f3000000000026869"),
        ]
        for (message, requestID, expected) in cases {
            #expect(hex(message, requestID) == expected, "\(message.kind)")
            // And each decodes back to itself in version 3.
            let bytes = message.frame(requestID: requestID, version: 3)
            var decoder = FrameDecoder()
            decoder.append(bytes)
            #expect(try Message(frame: try #require(try decoder.next()), version: 3) == message)
        }
    }

    @Test func beforeVersion3AMemoAndAnUpdateAreWrittenExactlyAsVersion2WroteThem() throws {
        let memo = Memo(id: Self.id, content: "hi", insertMicros: Self.date, updateMicros: Self.date, revision: 1,
                        author: Self.alice)
        let old = Message.memo(memo).frame(requestID: 1, version: 2)
        #expect(old.count == 9 + Message.memoFixedSize + 2)
        var decoder = FrameDecoder()
        decoder.append(old)
        var withoutAuthor = memo
        withoutAuthor.author = .none
        #expect(try Message(frame: try #require(try decoder.next()), version: 2) == .memo(withoutAuthor))
        let update = Message.update(id: Self.id, expectedRevision: nil, content: "hi", merge: true)
        #expect(update.frame(requestID: 1, version: 2).count + 1 == update.frame(requestID: 1, version: 3).count)
    }

    @Test func unknownUpdateFlagBitsAreAnUndefinedValue() throws {
        var bytes = Message.update(id: Self.id, expectedRevision: nil, content: "", merge: false)
            .frame(requestID: 1, version: 3)
        bytes[bytes.count - 1] = 0x80
        var decoder = FrameDecoder()
        decoder.append(bytes)
        let frame = try #require(try decoder.next())
        #expect(throws: WireError.invalidValue(field: "update flags", value: 0x80)) {
            try Message(frame: frame, version: 3)
        }
    }

    /// Memos by two authors, each memo's author made afresh (as a server's rows or connections would).
    private func memos(_ count: Int, from first: UInt64) -> [Memo] {
        (0..<count).map { index in
            Memo(id: UUID(), content: "memo \(index)", insertMicros: Self.date, updateMicros: Self.date,
                 revision: first + UInt64(index),
                 author: Author(name: index % 2 == 0 ? "alice" : "bob", serial: String(repeating: "A", count: 40)))
        }
    }

    @Test func aSnapshotsMemosByOneAuthorShareOneAuthorWithinAFrameAndAcrossAConnectionsFrames() throws {
        let chunks = [memos(6, from: 1), memos(4, from: 7)]
        var decoder = FrameDecoder()
        for (index, chunk) in chunks.enumerated() {
            let message = Message.snapshot(revision: 10, last: index == 1, memos: chunk)
            decoder.append(message.frame(requestID: 3, version: 3))
        }
        var authors = AuthorInterner()
        var decoded: [Memo] = []
        while let frame = try decoder.next() {
            guard case .snapshot(_, _, let memos) = try Message(frame: frame, version: 3, authors: &authors) else {
                Issue.record("not a snapshot")
                return
            }
            decoded += memos
        }
        #expect(decoded == chunks[0] + chunks[1])
        #expect(decoded.map(\.author) == (chunks[0] + chunks[1]).map(\.author))
        let alice = decoded[0].author
        let bob = decoded[1].author
        #expect(decoded.enumerated().allSatisfy { $0.element.author.isShared(with: $0.offset % 2 == 0 ? alice : bob) })
        #expect(!alice.isShared(with: bob) && authors.count == 2)
        // Without a connection's table, one frame's memos still share.
        decoder.append(Message.memos(revision: 10, last: true, memos: chunks[0]).frame(requestID: 4, version: 3))
        guard case .memos(_, _, let alone) = try Message(frame: try #require(try decoder.next()), version: 3) else {
            Issue.record("not a list chunk")
            return
        }
        #expect(alone[2].author.isShared(with: alone[0].author) && !alone[0].author.isShared(with: alice))
    }

    @Test func anAuthorThatIsNotUTF8IsRefusedWhenShared() throws {
        var bytes = Message.snapshot(revision: 1, last: true, memos: memos(1, from: 1)).frame(requestID: 3, version: 3)
        // The serial's last byte.
        bytes[bytes.count - 1] = 0xFF
        var decoder = FrameDecoder()
        decoder.append(bytes)
        let frame = try #require(try decoder.next())
        var authors = AuthorInterner()
        #expect(throws: WireError.invalidUTF8(field: "memo author serial")) {
            try Message(frame: frame, version: 3, authors: &authors)
        }
        #expect(throws: WireError.invalidUTF8(field: "memo author serial")) { try Message(frame: frame, version: 3) }
    }
}
