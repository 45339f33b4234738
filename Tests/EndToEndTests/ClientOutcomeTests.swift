import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoModel
import MemoNet
import MemoSQLite
import MemoServer
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// Outcomes told truly (done, refused, unknown), with the built binaries.
@Suite("Client: unknown outcomes", .serialized)
struct ClientOutcomeTests {
    /// The server is stopped (SIGSTOP) just after the client sent its create: the create sits, unread, in the
    /// server's socket; the client's `--timeout` passes with no answer.
    @Test func aCreateSentToAServerThatThenStopsExitsSevenAndMayStillBeApplied() async throws {
        let certificates = try TestCertificates()
        let data = try TemporaryDirectory()
        // With session tickets on (the default): the server writes its ticket with the welcome, after it has read
        // the hello and the create behind it, not as soon as it reads the client's Finished, when a write to the
        // proxy's closed socket could draw a reset and the create, never read, would not be applied.
        let server = try ServerProcess(
            arguments: ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path,
                        "--listen", "127.0.0.1:0"],
            directory: data)
        let stopped = Mutex(false)
        defer {
            kill(server.process.processIdentifier, SIGCONT)
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let serverPID = server.process.processIdentifier
        // Turn 2 is the client's TLS Finished and hello, with add's create right behind the hello (it does not
        // wait for the welcome): stopped there, the server holds the create unread and has not welcomed us.
        let proxy = try TurnProxy(to: SocketAddress(parsing: server.address)) { turn in
            guard turn == 2 else { return }
            kill(serverPID, SIGSTOP)
            stopped.withLock { $0 = true }
        }
        defer { proxy.stop() }

        let (status, out, err) = try runClient(
            ["--timeout", "3", "add", "sent, then the server froze"], server: proxy.address, certs: certificates.path)
        #expect(stopped.withLock { $0 })
        #expect(status == ExitCode.outcomeUnknown.rawValue, "stdout: \(out) stderr: \(err)")
        #expect(out.isEmpty)
        #expect(err.split(separator: "\n").count == 1)
        #expect(err.contains("outcome unknown"))
        #expect(err.contains("may or may not have been applied"))

        // Unknown it was: the server, running again, reads the create and applies it.
        kill(serverPID, SIGCONT)
        let deadline = ContinuousClock.now + .seconds(20)
        var listed = ""
        while ContinuousClock.now < deadline {
            listed = try runClient(["list"], server: server.address, certs: certificates.path).out
            if listed.contains("sent, then the server froze") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(listed.contains("sent, then the server froze"))
    }

    @Test func aWriteWhenNoServerListensIsNeverSentAndExitsSix() throws {
        let certificates = try TestCertificates()
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let port = try closed.localAddress().port
        closed.close()
        let (status, _, err) = try runClient(
            ["--timeout", "1", "add", "nobody listens"], server: "127.0.0.1:\(port)", certs: certificates.path)
        #expect(status == ExitCode.unreachable.rawValue)
        #expect(err.contains("cannot reach"))
        #expect(!err.contains("outcome unknown"))
    }

    /// The server applies each write and answers 505 (a test hook standing in for the PostgreSQL store, whose
    /// broken commit connection sends the real 505: another engineer's change). `add`, `edit` and `rm` retry by
    /// id and find what their first try did: each ends 0 and the store holds the write once.
    @Test func writesAnswered505AreRetriedByIDAndEndZeroWhenTheFirstTryWasApplied() async throws {
        let directory = try TemporaryDirectory()
        let store = OutcomeUnknownStore(try SQLiteStore(path: directory.path + "/memos.sqlite"), armed: [.create])
        let server = try TestServer(store: store)
        defer { server.stop() }
        let address = server.address.description
        let certs = server.certificates.path

        let added = try runClient(["add", "made once"], server: address, certs: certs)
        #expect(added.status == 0, "stderr: \(added.err)")
        #expect(store.withheld == 1)
        let memos = store.snapshot().memos
        #expect(memos.map(\.content) == ["made once"])
        let memo = try #require(memos.first)
        #expect(added.out == MemoFormatter(style: OutputStyle(json: false, human: false, color: false)).line(memo)
            + "\n")

        // An edit without --if-revision reads the revision first; its retry meets a conflict whose memo holds our
        // bytes: our first try's.
        store.arm(.update)
        let edited = try runClient(["edit", memo.id.uuidString, "edited once"], server: address, certs: certs)
        #expect(edited.status == 0, "stderr: \(edited.err)")
        #expect(store.withheld == 2)
        let afterEdit = try store.memo(memo.id)
        #expect(afterEdit.content == "edited once")
        #expect(afterEdit.revision == memo.revision + 1)

        // The same with --if-revision.
        store.arm(.update)
        let conditional = try runClient(
            ["edit", memo.id.uuidString, "edited twice", "--if-revision", String(afterEdit.revision)],
            server: address, certs: certs)
        #expect(conditional.status == 0, "stderr: \(conditional.err)")
        #expect(store.withheld == 3)
        #expect(try store.memo(memo.id).revision == afterEdit.revision + 1)

        // A delete's retry finds nothing: the first try did it.
        store.arm(.delete)
        let removed = try runClient(["rm", memo.id.uuidString], server: address, certs: certs)
        #expect(removed.status == 0, "stderr: \(removed.err)")
        #expect(store.withheld == 4)
        #expect(store.snapshot().memos.isEmpty)
        #expect(store.revision == memo.revision + 3)
    }

    /// `import` retries a create answered 505 by its id, like `add` (the same test hook as above).
    @Test func anImportedCreateAnswered505IsRetriedByItsIDAndCountedOnce() throws {
        let directory = try TemporaryDirectory()
        let store = OutcomeUnknownStore(try SQLiteStore(path: directory.path + "/memos.sqlite"), armed: [.create])
        let server = try TestServer(store: store)
        defer { server.stop() }
        let lines = [
            #"{"id":"6f1c0a52-4d0e-4c38-9a55-0c7e8d1e2f01","content":"first","insertDate":"2026-11-30T03:26:13.123456Z","updateDate":"2026-11-30T03:26:13.123456Z","revision":1}"#,
            #"{"id":"6f1c0a52-4d0e-4c38-9a55-0c7e8d1e2f02","content":"second","insertDate":"2026-11-30T03:27:13.123456Z","updateDate":"2026-11-30T03:27:13.123456Z","revision":2}"#,
        ]
        let imported = try runClient(
            ["import", "-"], server: server.address.description, certs: server.certificates.path,
            stdin: lines.joined(separator: "\n") + "\n")
        #expect(imported.status == 0, "stderr: \(imported.err)")
        #expect(imported.out == "created 2\tunchanged 0\tconflicts 0\tinvalid 0\tfailed 0\n")
        #expect(store.withheld == 1)
        #expect(store.snapshot().memos.map(\.content) == ["second", "first"])
        #expect(store.revision == 2)
    }
}
