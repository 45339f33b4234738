import Foundation
import MemoModel
import MemoWire
import Testing

@testable import MemoClient

@Suite("Client connection machine: list-page goes only to a server that agreed version 2")
struct ClientListPageMachineTests {
    typealias Driver = ClientMachineDriver

    @Test func helloOffersVersions1To2AndAPageIsSentAndItsChunksJoined() throws {
        var driver = Driver()
        _ = driver.start()
        _ = driver.connected()
        guard case .hello(let low, let high, _)? = driver.sent(driver.handshakeDone()).first?.message else {
            Issue.record("no hello")
            return
        }
        #expect((low, high) == (1, WireProtocol.version))
        _ = driver.receive([Driver.welcome(revision: 3)])
        let (id, actions) = driver.submit(.listPage(limit: 2, after: nil))
        #expect(driver.sent(actions).map(\.message) == [.listPage(limit: 2, after: nil)])
        let memos = [Driver.memo(1, revision: 3), Driver.memo(2, revision: 2)]
        #expect(driver.completions(driver.receive(.page(revision: 3, last: false, more: false, memos: [memos[0]]),
                                                  id: id)).isEmpty)
        let done = driver.completions(driver.receive(.page(revision: 3, last: true, more: true, memos: [memos[1]]),
                                                     id: id))
        guard case .success(.page(let page))? = done.first?.result else {
            Issue.record("\(done)")
            return
        }
        #expect(page == ListPage(revision: 3, memos: memos, more: true))
    }

    @Test func aVersion1ServerGetsNoPageTheRequestFailsAtOnceAndOthersStillGo() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.connected()
        _ = driver.handshakeDone()
        _ = driver.receive([Driver.frame(
            .welcome(version: 1, revision: 0, maxFrameSize: 1 << 20, role: .readWrite, server: "old"), id: 1)])
        let (id, actions) = driver.submit(.listPage(limit: 10, after: nil))
        #expect(driver.sent(actions).isEmpty)
        let completions = driver.completions(actions)
        #expect(completions.map(\.id) == [id])
        guard case .failure(let error)? = completions.first?.result,
            let old = error as? ServerTooOldError, (old.speaks, old.needs) == (1, 2)
        else {
            Issue.record("\(completions)")
            return
        }
        #expect(driver.closesConnection(actions) == nil)
        let (_, listed) = driver.submit(.list)
        #expect(driver.sent(listed).map(\.message) == [.list])
    }
}
