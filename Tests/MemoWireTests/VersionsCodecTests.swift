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
}
