import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoProbe
import MemoSQLite
import MemoServer
import MemoStore
import MemoTUI
import MemoTestSupport
import MemoViewModels
import MemoWire
import ServerTestSupport
import StoreTestSupport
import Testing

/// `가` composed (NFC, `ea b0 80`) and decomposed (NFD, `e1 84 80 e1 85 a1`): canonically equivalent, so Swift's
/// `String ==` calls them equal, but other bytes.
let hangulNFC = String(decoding: [0xEA, 0xB0, 0x80] as [UInt8], as: UTF8.self)
let hangulNFD = String(decoding: [0xE1, 0x84, 0x80, 0xE1, 0x85, 0xA1] as [UInt8], as: UTF8.self)

@Suite("Identity is decided on UTF-8 bytes: NFC and NFD spellings are different content everywhere")
struct ByteIdentityTests {
    @Test func theTwoSpellingsAreEqualStringsButNotTheSameBytesNorTheSameMemo() {
        #expect(hangulNFC == hangulNFD)  // why the byte comparison is needed at all
        #expect(!hangulNFC.hasSameBytes(as: hangulNFD))
        #expect(hangulNFC.hasSameBytes(as: String(decoding: [0xEA, 0xB0, 0x80] as [UInt8], as: UTF8.self)))
        let id = UUID()
        let composed = Memo(id: id, content: hangulNFC, insertMicros: 1, updateMicros: 1, revision: 1)
        var decomposed = composed
        decomposed.content = hangulNFD
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func aCreateRetriedWithTheOtherSpellingIsAConflict(kind: StoreKind) async throws {
        let handle = try kind.make()
        defer { handle.store.close() }
        let store = handle.store
        let id = UUID()
        let made = try await store.create(content: hangulNFC, id: id, insertDate: nil)
        #expect(try await store.create(content: hangulNFC, id: id, insertDate: nil) == made)
        await #expect(throws: MemoError.conflict(id: id, expected: nil, actual: 1)) {
            try await store.create(content: hangulNFD, id: id, insertDate: nil)
        }
        #expect(Array(try await store.get(id: id).content.utf8) == [0xEA, 0xB0, 0x80])
        #expect(store.revision == 1)
    }

    @Test func theSQLiteFileKeepsTheBytesAsWritten() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/memos.sqlite"
        var store = try SQLiteStore(path: path)
        let id = UUID()
        _ = try await store.create(content: hangulNFD, id: id, insertDate: nil)
        store.close()
        store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(Array(try store.memo(id).content.utf8) == [0xE1, 0x84, 0x80, 0xE1, 0x85, 0xA1])
        await #expect(throws: MemoError.self) { try await store.create(content: hangulNFC, id: id, insertDate: nil) }
    }

    @Test(arguments: StoreKind.allCases)
    func overTheWireTheOtherSpellingIsError201(kind: StoreKind) throws {
        let handle = try kind.make()
        let server = try TestServer(store: handle.store)
        defer { server.stop() }
        let client = try server.connect()
        let id = UUID()
        guard case .memo(let made) = try client.request(.create(id: id, insertMicros: nil, content: hangulNFD)) else {
            Issue.record("the create was not answered with a memo")
            return
        }
        #expect(Array(made.content.utf8) == [0xE1, 0x84, 0x80, 0xE1, 0x85, 0xA1])
        #expect(try client.request(.create(id: id, insertMicros: nil, content: hangulNFD)) == .memo(made))
        let retry = try client.request(.create(id: id, insertMicros: nil, content: hangulNFC))
        #expect({ if case .error(.conflict, _) = retry { true } else { false } }(), "\(retry)")
        #expect(server.store.revision == 1)
    }

    @Test @FrontEnd func theFrontEndCountsTheOtherSpellingFromTheEditorAsAChange() async throws {
        let store = MemoryStore()
        let original = try await store.create(content: hangulNFC, id: UUID(), insertDate: nil)
        let compose = ComposeViewModel(mode: .edit(original), storage: store)
        #expect(!compose.current.isDirty)
        compose.replaceText(hangulNFD)  // what $EDITOR gave back
        #expect(compose.current.isDirty)
    }

    @Test func theClientLibrarySeesTheOtherSpellingAsAConflict() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try await MemoConnection.connect(server.clientConfiguration())
        defer { client.close() }
        let id = UUID()
        let made = try await client.create(content: hangulNFC, id: id)
        #expect(try await client.create(content: hangulNFC, id: id) == made)
        await #expect(throws: MemoError.self) { try await client.create(content: hangulNFD, id: id) }
        #expect(Array(try await client.get(id: id).content.utf8) == [0xEA, 0xB0, 0x80])
    }
}
