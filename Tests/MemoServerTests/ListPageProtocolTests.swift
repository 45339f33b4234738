import Foundation
import MemoModel
import MemoProbe
import MemoServer
import MemoStore
import MemoWire
import ServerTestSupport
import Testing

@Suite("Protocol version 2: list-page, agreed in hello; a version 1 connection or server never sees it")
struct ListPageProtocolTests {
    @Test func helloAgreesTheHighestCommonVersion() throws {
        let server = try TestServer()
        defer { server.stop() }
        for (range, agreed) in [((1, 1), 1), ((1, 2), 2), ((2, 2), 2), ((1, 9), 3), ((3, 3), 3)] as [((UInt16, UInt16), UInt16)] {
            let client = try server.connect(hello: false)
            let reply = try client.request(.hello(minVersion: range.0, maxVersion: range.1, client: "v"))
            guard case .welcome(let version, _, _, _, _) = reply else {
                Issue.record("\(range): \(reply)")
                continue
            }
            #expect(version == agreed, "\(range)")
        }
        let client = try server.connect(hello: false)
        let refused = try client.request(.hello(minVersion: 4, maxVersion: 5, client: "future"))
        guard case .error(.unsupportedVersion, let text) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(text == "this server speaks protocol versions 1 to 3; the client speaks 4 to 5")
    }

    @Test func aPageIsAnsweredInChunksWithMoreOnTheLast() throws {
        let store = MemoryStore()
        let server = try TestServer(store: store, limits: {
            var limits = ServerLimits()
            limits.maxFrameSize = 4096
            return limits
        }())
        defer { server.stop() }
        let big = String(repeating: "가", count: 600)  // 1,800 bytes: two per chunk of a 4 KiB frame
        for index in 0..<10 {
            _ = store.storeState.planAndApply([.create(id: UUID(), content: "\(index) \(big)", insertMicros: nil)],
                                        nowMicros: 1_700_000_000_000_000)
        }
        let client = try server.connect(hello: false)
        _ = try client.request(.hello(minVersion: 1, maxVersion: 2, client: "pages"))
        let id = try client.send(.listPage(limit: 5, after: nil))
        var memos: [Memo] = []
        var chunks = 0
        while true {
            let (frame, message) = try client.receive()
            #expect(frame.requestID == id)
            guard case .page(let revision, let last, let more, let part) = message else {
                Issue.record("\(message)")
                return
            }
            #expect(revision == 10)
            memos += part
            chunks += 1
            if last {
                #expect(more)
                break
            }
            #expect(!more)
        }
        #expect(chunks == 3)
        let list = store.snapshot().memos
        #expect(memos == Array(list.prefix(5)))
        // The rest: from the cursor, no limit, nothing more after it.
        let restID = try client.send(.listPage(limit: 0, after: ListCursor(after: memos[4])))
        var rest: [Memo] = []
        while true {
            let (_, message) = try client.receive { $0.requestID == restID }
            guard case .page(_, let last, let more, let part) = message else { return }
            rest += part
            if last {
                #expect(!more)
                break
            }
        }
        #expect(rest == Array(list.dropFirst(5)))
    }

    @Test func aPageFromAClientOnAVersion2ConnectionIs203AndTheConnectionStaysOpen() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect(hello: false)
        _ = try client.request(.hello(minVersion: 1, maxVersion: 2, client: "v2"))
        let reply = try client.request(.page(revision: 0, last: true, more: false, memos: []))
        #expect(isError(reply, .invalidRequest), "\(reply)")
        #expect(try client.request(.ping(nonce: 1)) == .pong(nonce: 1))
    }

    @Test func listPageOnAVersion1ConnectionIsAnUnknownTypeAndCloses() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()  // the probe says hello with versions 1 to 1
        _ = try client.send(.listPage(limit: 1, after: nil), id: 9)
        let messages = try client.readUntilClosed()
        #expect(messages.contains { if case .error(.unknownMessageType, _) = $0 { true } else { false } },
                "\(messages)")
    }
}
