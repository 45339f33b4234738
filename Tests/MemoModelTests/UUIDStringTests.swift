import Foundation
import MemoModel
import Testing

@Suite("UUID.lowercasedString and UUID.random: ids as scripts and PostgreSQL read them, and new ones")
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

    @Test func randomIDsAreVersionFourVariantOneAndDistinct() {
        let ids = (0..<10_000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 4, "version of \(id)")
            #expect(id.uuid.8 >> 6 == 0b10, "variant of \(id)")
            #expect(UUID(uuidString: id.uuidString) == id)
        }
        // Every other bit varies: no byte is the same in all of them (the fixed nibbles aside).
        for index in 0..<16 {
            let values = Set(ids.map { withUnsafeBytes(of: $0.uuid) { $0[index] } })
            #expect(values.count > 1, "byte \(index) never varies")
        }
    }
}
