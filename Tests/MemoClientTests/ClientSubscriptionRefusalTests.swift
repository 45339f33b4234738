import Foundation
import MemoModel
import MemoWire
import Testing

@testable import MemoClient

/// A subscription the server cannot serve for a reason of its own (501 while its database is frozen, 504 while it
/// reloads) is not the end of it: the client connects again, to the next address when there are several, and the
/// subscription resumes after its last applied revision. Before, the failure ended the subscription and a watcher
/// waited for changes that never came (found by `memo-torture gray`'s stop-postgres fault).
@Suite("Client machine: a subscription the server cannot serve now")
struct ClientSubscriptionRefusalTests {
    typealias Driver = ClientMachineDriver

    @Test(arguments: [ErrorCode.storageUnavailable, .lagging, .shuttingDown, .internalError])
    func aSubscriptionRefusedForTheServersOwnTroubleMovesToTheNextServerAndResumes(code: ErrorCode) {
        var driver = Driver(servers: "beta:7420,alpha:7420")
        driver.starts[5] = .some(nil)
        _ = driver.start()
        _ = driver.subscribe(token: 5)
        let live = driver.goLive(revision: 10)
        let run = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        _ = driver.receive(.subscribed(head: 10), id: run[0].id)
        driver.starts[5] = 10

        // A reconnect to the same server, whose store is still frozen: the subscribe is refused.
        let refused = driver.receive(.error(code: code, message: "PostgreSQL did not answer"), id: run[0].id)
        #expect(driver.deliveries(refused).isEmpty, "the refusal is the machine's to handle, not the watcher's")
        #expect(driver.closesConnection(refused) != nil)
        #expect(driver.failures(refused).map { $0?.name } == ["lost"])
        let next = driver.fire(.reconnect)
        #expect(driver.connects(refused + next) == ["alpha:7420"])

        let resumed = driver.goLive(revision: 12)
        let again = driver.sent(resumed).filter { $0.id != ClientConnectionMachine.helloRequestID }
        #expect(again.map(\.message) == [.subscribe(after: 10)])
    }

    @Test func aSubscriptionRefusedForTheRequestItselfIsDeliveredAndTheConnectionStays() {
        var driver = Driver()
        driver.starts[2] = .some(nil)
        _ = driver.start()
        _ = driver.subscribe(token: 2)
        let live = driver.goLive()
        let run = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        let refused = driver.receive(
            .error(code: .invalidRequest, message: "over the limit of subscriptions"), id: run[0].id)
        #expect(driver.closesConnection(refused) == nil)
        let delivered = driver.deliveries(refused)
        #expect(delivered.count == 1)
        #expect(delivered.first?.events == [.failed(code: .invalidRequest, message: "over the limit of subscriptions")])
    }
}
