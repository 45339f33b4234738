import Foundation
import MemoModel
import MemoPKI
import MemoProbe
import MemoServer
import MemoStore
import MemoTLS
import MemoWire
import ServerTestSupport
import Testing

@Suite("Protocol version 3: authors from the certificate, history, trash and restore; version 2 served as before")
struct VersionsProtocolTests {
    private func serial(_ server: TestServer, _ name: String) throws -> String {
        try CertificateInfo(path: server.certificates.path + "/\(name).crt").serial
    }

    @Test func everyWriteIsByItsCertificateAndVersion3CarriesTheAuthorInEveryMemo() throws {
        let server = try TestServer()
        defer { server.stop() }
        _ = try CertificateAuthority.issueClient(
            name: "bob", directory: server.certificates.path, validity: .days(1))
        let alice = try server.connect(hello: false)
        #expect(try alice.hello(version: 3) == .welcome(
            version: 3, revision: 0, maxFrameSize: UInt32(ServerLimits().maxFrameSize), role: .readWrite,
            server: "memo-server"))
        let bob = try server.connect("bob", hello: false)
        try bob.hello(version: 3)
        let aliceAuthor = Author(name: "client", serial: try serial(server, "client"))
        let bobAuthor = Author(name: "bob", serial: try serial(server, "bob"))
        #expect(!aliceAuthor.serial.isEmpty && aliceAuthor.serial != bobAuthor.serial)

        let subscription = try bob.send(.subscribe(after: nil))
        _ = try bob.receive { $0.requestID == subscription }  // the snapshot
        let made = try #require(memo(try alice.request(.create(id: nil, insertMicros: nil, content: "앨리스"))))
        #expect(made.author == aliceAuthor)
        let edited = try #require(memo(try bob.request(
            .update(id: made.id, expectedRevision: made.revision, content: "bob's"))))
        #expect(edited.author == bobAuthor)
        #expect(try server.store.memo(made.id).author == bobAuthor)
        // The change pushed to a version 3 subscriber carries the author.
        var authors: [Author] = []
        while authors.count < 2 {
            if case .change(let change) = try bob.receive({ $0.requestID == subscription }).1 {
                authors.append(change.memo.author)
            }
        }
        #expect(authors == [aliceAuthor, bobAuthor])
        // get, list, list-page and a snapshot carry it too.
        #expect(try alice.request(.get(id: made.id)) == .memo(edited))
        guard case .memos(_, _, let listed) = try alice.request(.list) else { Issue.record("no memos"); return }
        #expect(listed.map(\.author) == [bobAuthor])
        guard case .page(_, _, _, let paged) = try alice.request(.listPage(limit: 5, after: nil)) else {
            Issue.record("no page")
            return
        }
        #expect(paged.map(\.author) == [bobAuthor])

        // History, newest first, with a cursor.
        guard case .versions(let id, let more, let versions) = try alice.request(
            .history(id: made.id, limit: 1, before: nil)) else { Issue.record("no versions"); return }
        #expect(id == made.id)
        #expect(more)
        #expect(versions.map(\.author) == [bobAuthor])
        #expect(versions.map(\.kind) == [.update])
        #expect(try alice.request(.history(id: made.id, limit: 5, before: edited.revision))
            == .versions(id: made.id, more: false, versions: [MemoVersion(
                id: made.id, revision: made.revision, kind: .create, micros: made.updateMicros, author: aliceAuthor,
                content: "앨리스")]))
    }

    @Test func deleteTrashAndRestoreOverTheWireWithReadOnlyAllowedToReadOnly() throws {
        let server = try TestServer()
        defer { server.stop() }
        let writer = try server.connect(hello: false)
        try writer.hello(version: 3)
        let reader = try server.connect("reader", hello: false)
        try reader.hello(version: 3)
        let made = try #require(memo(try writer.request(.create(id: nil, insertMicros: nil, content: "one"))))
        let edited = try #require(memo(try writer.request(
            .update(id: made.id, expectedRevision: nil, content: "two"))))
        _ = try writer.request(.delete(id: made.id, expectedRevision: nil))

        guard case .trashPage(let more, let entries) = try reader.request(.trash(limit: 10, before: nil)) else {
            Issue.record("no trash page")
            return
        }
        #expect(!more)
        #expect(entries.map(\.memo.id) == [made.id])
        #expect(entries.first?.memo.content == "two")
        #expect(entries.first?.deletedBy.name == "client")
        guard case .versions(_, _, let versions) = try reader.request(.history(id: made.id, limit: 10, before: nil))
        else { Issue.record("no versions"); return }
        #expect(versions.map(\.revision) == [edited.revision, made.revision])

        // A read-only certificate may read history and trash, not restore.
        guard case .error(.permissionDenied, _) = try reader.request(
            .restore(id: made.id, revision: nil, expectedRevision: nil)) else {
            Issue.record("a read-only restore was not refused")
            return
        }
        let back = try #require(memo(try writer.request(.restore(id: made.id, revision: nil, expectedRevision: nil))))
        #expect(back.id == made.id && back.content == "two")
        let older = try #require(memo(try writer.request(
            .restore(id: made.id, revision: made.revision, expectedRevision: back.revision))))
        #expect(older.content == "one")
        // A version not kept, an unknown id: not found with the reason.
        guard case .error(.notFound, let why) = try writer.request(
            .restore(id: made.id, revision: 999, expectedRevision: nil)) else {
            Issue.record("a restore of an unknown version was not refused")
            return
        }
        #expect(why.contains("version 999 not found"))
        guard case .error(.notFound, _) = try writer.request(.history(id: UUID(), limit: 5, before: nil)) else {
            Issue.record("the history of an unknown id was not not-found")
            return
        }
        guard case .error(.invalidRequest, _) = try writer.request(.history(id: made.id, limit: 0, before: nil))
        else { Issue.record("a zero limit was taken"); return }
    }

    @Test func anUpdateFlagsByteWithUnknownBitsIsTheBadFieldError() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect(hello: false)
        try client.hello(version: 3)
        let made = try #require(memo(try client.request(.create(id: nil, insertMicros: nil, content: "x"))))
        var bytes = Message.update(id: made.id, expectedRevision: nil, content: "y", merge: true)
            .frame(requestID: 9, version: 3)
        bytes[bytes.count - 1] = 0x02
        try client.sendRaw(bytes)
        let (_, answer) = try client.receive { $0.requestID == 9 }
        guard case .error(let code, let text) = answer else { Issue.record("\(answer)"); return }
        #expect(code == WireError.invalidValue(field: "update flags", value: 2).code)
        #expect(text.contains("update flags"))
        // That connection is closed, as for any malformed frame; the server serves the others. The merge bit alone
        // is taken (carried to the store, which answers as for any update here).
        let other = try server.connect(hello: false)
        try other.hello(version: 3)
        let merged = try #require(memo(try other.request(
            .update(id: made.id, expectedRevision: made.revision, content: "z", merge: true))))
        #expect(merged.content == "z")
    }

    @Test func aVersion2ClientCreatesUpdatesListsAndSubscribesWithVersion2BytesOnly() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect(hello: false)
        guard case .welcome(let version, _, _, _, _) = try client.hello(version: 2) else { return }
        #expect(version == 2)
        let watcher = try server.connect(hello: false)
        try watcher.hello(version: 2)
        let subscription = try watcher.send(.subscribe(after: nil))
        _ = try watcher.receive { $0.requestID == subscription }

        // Raw frames: a version 2 memo is exactly its fields and content, no author after it.
        let createID = try client.send(.create(id: nil, insertMicros: nil, content: "둘"))
        let (createFrame, createAnswer) = try client.receive { $0.requestID == createID }
        let made = try #require(memo(createAnswer))
        #expect(createFrame.payload.count == Message.memoFixedSize + "둘".utf8.count)
        #expect(made.author == .none)
        // An update in version 2 has no flags byte: its frame ends with the content.
        let update = Message.update(id: made.id, expectedRevision: made.revision, content: "2")
            .frame(requestID: 50, version: 2)
        #expect(update.suffix(1) == Array("2".utf8))
        try client.sendRaw(update)
        let edited = try #require(memo(try client.receive { $0.requestID == 50 }.1))
        #expect(edited.content == "2")
        guard case .memos(_, _, let listed) = try client.request(.list) else { Issue.record("no list"); return }
        #expect(listed == [edited])
        guard case .page(_, _, _, let paged) = try client.request(.listPage(limit: 1, after: nil)) else { return }
        #expect(paged == [edited])
        var changes: [Change] = []
        while changes.count < 2 {
            let (frame, message) = try watcher.receive { $0.requestID == subscription }
            if case .change(let change) = message {
                #expect(frame.payload.count == 9 + Message.memoFixedSize + change.memo.content.utf8.count)
                changes.append(change)
            }
        }
        #expect(changes.map(\.memo) == [made, edited])
        // Version 3 requests are unknown on a version 2 connection, as on a version 2 server.
        let refused = try client.request(.history(id: made.id, limit: 5, before: nil))
        guard case .error(.unknownMessageType, _) = refused else { Issue.record("\(refused)"); return }
    }
}
