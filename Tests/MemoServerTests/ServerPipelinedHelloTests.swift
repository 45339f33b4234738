import Foundation
import MemoModel
import MemoProbe
import MemoWire
import ServerTestSupport
import Testing

@testable import MemoServer

/// PROTOCOL.md lets a client send requests right behind `hello`, before `welcome` comes (memo-client's one-request
/// commands send their create so, saving a round trip).
@Suite struct ServerPipelinedHelloTests {
    @Test func requestsSentBehindHelloAreAnsweredAfterTheWelcomeAndAppliedInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect(hello: false)
        let first = UUID()
        let second = UUID()
        // Hello and two creates in one write: the server reads them together, before it has answered hello.
        let bytes = Message.hello(minVersion: 1, maxVersion: WireProtocol.version, client: "pipelining")
            .frame(requestID: 1)
            + Message.create(id: first, insertMicros: nil, updateMicros: nil, content: "behind hello")
            .frame(requestID: 2)
            + Message.create(id: second, insertMicros: nil, updateMicros: nil, content: "and after it")
            .frame(requestID: 3)
        try client.sendRaw(bytes)
        let (welcomeFrame, welcome) = try client.receive()
        #expect(welcomeFrame.requestID == 1)
        guard case .welcome(_, let revision, _, _, _) = welcome else {
            Issue.record("expected welcome first, got \(welcome)")
            return
        }
        let (_, one) = try client.receive { $0.requestID == 2 }
        let (_, two) = try client.receive { $0.requestID == 3 }
        guard case .memo(let created) = one, case .memo(let next) = two else {
            Issue.record("expected two memos, got \(one) and \(two)")
            return
        }
        #expect(created.id == first && Array(created.content.utf8) == Array("behind hello".utf8))
        #expect(next.id == second && Array(next.content.utf8) == Array("and after it".utf8))
        // Applied in the order sent, both after the revision the welcome reported.
        #expect(revision < created.revision && created.revision < next.revision)
    }
}
