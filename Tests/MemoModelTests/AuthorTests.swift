import Foundation
import MemoModel
import Testing

@Suite("Author: one reference wide, equal and hashed by its bytes, shared by an AuthorInterner")
struct AuthorTests {
    /// A serial as certificates have them: 40 hex characters, a heap string of its own each time it is made.
    static let serial = String(repeating: "3F", count: 20)

    @Test func anAuthorIsOneReferenceWideAndAMemoSixtyFourBytes() {
        #expect(MemoryLayout<Author>.size == 8)
        #expect(MemoryLayout<Memo>.size == 64)
    }

    @Test func authorsAreEqualAndHashAlikeByTheirBytesWhicheverInstanceHoldsThem() {
        let one = Author(name: "alice", serial: Self.serial)
        let other = Author(name: "alice", serial: Self.serial)
        #expect(one == other && one.hashValue == other.hashValue)
        #expect(!one.isShared(with: other))
        #expect(one != Author(name: "alice", serial: "3F"))
        #expect(one != Author(name: "alic", serial: "e" + Self.serial))
        #expect(Author(name: "", serial: "") == .none && Author(name: "", serial: "").isShared(with: .none))
        #expect(Author.none.isEmpty && Author.none.name.isEmpty && Author.none.serial.isEmpty)
        #expect(Author(name: "", serial: "1F") != .none && !Author(name: "", serial: "1F").isEmpty)
        #expect(Author.none.description == "-" && one.description == "alice")
        #expect(one.name == "alice" && one.serial == Self.serial)
    }

    @Test func aNameInNFCAndTheSameNameInNFDAreDifferentAuthors() {
        let composed = Author(name: "caf\u{E9}", serial: "1F")
        let decomposed = Author(name: "cafe\u{301}", serial: "1F")
        // Canonically equivalent as Strings, different bytes: different certificates' names.
        #expect(composed.name == decomposed.name)
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
    }

    @Test func theInternerSharesOneAuthorAmongEqualBytesAndKeepsDifferentOnesApart() throws {
        var interner = AuthorInterner()
        func read(_ name: String, _ serial: String) -> Author? {
            Array(name.utf8).withUnsafeBytes { name in
                Array(serial.utf8).withUnsafeBytes { interner.author(name: name, serial: $0) }
            }
        }
        let alice = try #require(read("alice", Self.serial))
        let bob = try #require(read("bob", Self.serial))
        // Alternating, so that the second alice is found by its hash and not as the last one returned.
        let again = try #require(read("alice", Self.serial))
        #expect(again.isShared(with: alice) && again == alice)
        #expect(try #require(read("bob", Self.serial)).isShared(with: bob))
        #expect(!alice.isShared(with: bob) && alice != bob)
        #expect(try #require(read("caf\u{E9}", "1F")) != (try #require(read("cafe\u{301}", "1F"))))
        #expect(try #require(read("", "")).isEmpty)
        #expect(interner.count == 4)
        // Bytes that are not UTF-8 are not an author; a store's rows are repaired as before, and not kept.
        let invalid: [UInt8] = [0x61, 0xFF]
        let refused = invalid.withUnsafeBytes { bad in
            Array("1F".utf8).withUnsafeBytes { interner.author(name: bad, serial: $0) }
        }
        #expect(refused == nil)
        let repaired = invalid.withUnsafeBytes { bad in
            Array("1F".utf8).withUnsafeBytes { interner.decoding(name: bad, serial: $0) }
        }
        #expect(repaired.name == "a\u{FFFD}" && interner.count == 4)
    }

    @Test func theInternerKeepsAtMostItsCapacityAndStillAnswersPastIt() throws {
        var interner = AuthorInterner()
        let names = (0..<(AuthorInterner.capacity + 10)).map { "user \($0)" }
        let authors = names.map { name in
            Array(name.utf8).withUnsafeBytes { name in
                Array(Self.serial.utf8).withUnsafeBytes { interner.decoding(name: name, serial: $0) }
            }
        }
        #expect(authors.map(\.name) == names)
        #expect(interner.count == AuthorInterner.capacity)
    }
}
