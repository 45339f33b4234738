import Foundation
import MemoModel
import MemoPKI
import MemoProbe
import MemoSQLite
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// Issue 29 over the wire: a version 3 update with the merge flag, stale because another client changed other
/// lines, is merged by the server; overlapping edits are still the conflict.
@Suite("Protocol: updates with the merge flag merged by the server, two clients at once")
struct MergeProtocolTests {
    /// A server over a SQLite file, and two version 3 clients with their own certificates.
    private func started() throws -> (TestServer, ProbeConnection, ProbeConnection, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let server = try TestServer(store: try SQLiteStore(path: directory.path + "/memos.sqlite"))
        _ = try CertificateAuthority.issueClient(name: "bob", directory: server.certificates.path, validity: .days(1))
        let alice = try server.connect(hello: false)
        try alice.hello(version: 3)
        let bob = try server.connect("bob", hello: false)
        try bob.hello(version: 3)
        return (server, alice, bob, directory)
    }

    @Test func twoClientsEditingDifferentLinesFromOneRevisionBothKeepTheirEditsWithNoConflict() throws {
        let (server, alice, bob, directory) = try started()
        defer { server.stop() }
        _ = directory
        let made = try #require(memo(try alice.request(
            .create(id: nil, insertMicros: nil, content: "장보기\n우유\n빵\n달걀\n"))))
        let watcher = try server.connect(hello: false)
        try watcher.hello(version: 3)
        let subscription = try watcher.send(.subscribe(after: made.revision))

        // Both start from the same revision; both send at once, before either answer.
        let aliceRequest = try alice.send(
            .update(id: made.id, expectedRevision: made.revision, content: "장보기\n두유\n빵\n달걀\n", merge: true))
        let bobRequest = try bob.send(
            .update(id: made.id, expectedRevision: made.revision, content: "장보기\n우유\n빵\n달걀 열 개\n", merge: true))
        let first = try #require(memo(try alice.receive { $0.requestID == aliceRequest }.1))
        let second = try #require(memo(try bob.receive { $0.requestID == bobRequest }.1))
        let both = "장보기\n두유\n빵\n달걀 열 개\n"
        // Whichever came second was merged; its answer holds both edits, and so does the memo.
        let last = first.revision > second.revision ? first : second
        #expect(Array(last.content.utf8) == Array(both.utf8))
        #expect(Array(try server.store.memo(made.id).content.utf8) == Array(both.utf8))
        #expect(Set([first.revision, second.revision]) == [made.revision + 1, made.revision + 2])
        // A subscriber sees two ordinary updates, the second with the merged text.
        var pushed: [Change] = []
        while pushed.count < 2 {
            if case .change(let change) = try watcher.receive({ $0.requestID == subscription }).1 {
                pushed.append(change)
            }
        }
        #expect(pushed.map(\.kind) == [.updated, .updated])
        #expect(Array(pushed[1].memo.content.utf8) == Array(both.utf8))
    }

    @Test func overlappingEditsAreStillTheConflictAndWithoutTheFlagAStaleUpdateIsToo() throws {
        let (server, alice, bob, directory) = try started()
        defer { server.stop() }
        _ = directory
        let made = try #require(memo(try alice.request(.create(id: nil, insertMicros: nil, content: "a\nb\nc\nd\n"))))
        let theirs = try #require(memo(try alice.request(
            .update(id: made.id, expectedRevision: made.revision, content: "a\nB\nc\nd\n", merge: true))))
        guard case .error(let code, let text) = try bob.request(
            .update(id: made.id, expectedRevision: made.revision, content: "a\nbob\nc\nd\n", merge: true))
        else { Issue.record("an overlapping edit was taken"); return }
        #expect(code == .conflict)
        #expect(text.contains("revision \(theirs.revision)"))
        // Different lines, but no merge flag: strict compare-and-swap, as always.
        guard case .error(.conflict, _) = try bob.request(
            .update(id: made.id, expectedRevision: made.revision, content: "a\nb\nc\nD\n"))
        else { Issue.record("a stale update without the flag was taken"); return }
        #expect(try server.store.memo(made.id) == theirs)
        // The connection still serves: with the flag, the same edit merges.
        let merged = try #require(memo(try bob.request(
            .update(id: made.id, expectedRevision: made.revision, content: "a\nb\nc\nD\n", merge: true))))
        #expect(merged.content == "a\nB\nc\nD\n")
    }
}
