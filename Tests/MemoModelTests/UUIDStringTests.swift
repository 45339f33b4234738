import Foundation
import MemoModel
import Testing

@Suite("UUID.lowercasedString: the id as scripts and PostgreSQL read it")
struct UUIDStringTests {
    @Test func itIsFoundationsStringLowercasedForRandomAndEdgeIDs() {
        var ids = (0..<2_000).map { _ in UUID() }
        ids.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        ids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        ids.append(UUID(uuid: (0x0F, 0xF0, 0x10, 0x01, 0xA0, 0x0A, 0x9F, 0xF9, 0x80, 0x08, 0x7E, 0xE7, 1, 2, 3, 4)))
        for id in ids {
            #expect(id.lowercasedString == id.uuidString.lowercased())
            #expect(UUID(uuidString: id.lowercasedString) == id)
        }
    }
}
