import Foundation
import MemoModel
import MemoWire
import Testing

@testable import MemoClient

/// The client's keepalive, event by event with no socket: a silent connection is pinged, an unanswered ping ends
/// it (a stopped server keeps its TCP connection up, so nothing else would), any frame counts as an answer, and
/// the subscription resumes on the next address after its last applied revision.
@Suite("Client keepalive machine")
struct ClientKeepaliveMachineTests {
    typealias Driver = ClientMachineDriver

    /// The pings among the actions, by request id.
    private func pings(_ driver: Driver, _ actions: [Driver.Action]) -> [UInt32] {
        driver.sent(actions).compactMap { sent in
            if case .ping = sent.message { return sent.id }
            return nil
        }
    }

    @Test func silentConnectionIsPingedAndAnUnansweredPingMovesTheSubscriptionToTheNextServer() {
        var driver = Driver(servers: "beta:7420,alpha:7420", keepalive: .seconds(1))
        driver.starts[3] = .some(nil)
        _ = driver.start()
        _ = driver.subscribe(token: 3)
        let live = driver.goLive(revision: 10)
        #expect(driver.scheduled(.keepalive(attempt: 1), in: live) == .seconds(1))
        let run = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        let change = Change(revision: 11, kind: .created, memo: Driver.memo(1, revision: 11))
        _ = driver.receive([
            Driver.frame(.subscribed(head: 10), id: run[0].id), Driver.frame(.change(change), id: run[0].id),
        ])
        driver.starts[3] = 11

        // Silent for the interval: one ping, and the answer is awaited for one more interval.
        driver.advance(.seconds(1))
        let check = driver.fire(.keepalive(attempt: 1))
        #expect(pings(driver, check).count == 1)
        #expect(driver.scheduled(.keepalive(attempt: 1), in: check) == .seconds(1))
        #expect(driver.closesConnection(check) == nil)
        #expect(driver.machine.pingSentAt == driver.now)

        // No answer: the connection is closed (not politely: the server is not reading) and counted as lost.
        driver.advance(.seconds(1))
        let lost = driver.fire(.keepalive(attempt: 1))
        #expect(driver.closesConnection(lost) == false)
        #expect(driver.failures(lost).map { $0?.name } == ["notAnswering"])
        #expect(driver.states(lost).allSatisfy { $0 == .reconnecting })
        #expect(driver.machine.phase == .idle)
        let next = driver.fire(.reconnect)
        #expect(driver.connects(lost + next) == ["alpha:7420"])

        // On the next server the subscription resumes after the last applied revision: no gap, no repeat.
        let resumed = driver.goLive(revision: 14)
        let again = driver.sent(resumed).filter { $0.id != ClientConnectionMachine.helloRequestID }
        #expect(again.map(\.message) == [.subscribe(after: 11)])
        #expect(driver.states(resumed) == [.live])
        #expect(driver.scheduled(.keepalive(attempt: 2), in: resumed) == .seconds(1))
        // The old connection's keepalive means nothing any more.
        #expect(driver.fire(.keepalive(attempt: 1)).isEmpty)
    }

    @Test func anyFrameCountsAsLifeSoABusyConnectionIsNeverPinged() {
        var driver = Driver(keepalive: .seconds(3))
        driver.starts[1] = .some(nil)
        _ = driver.start()
        _ = driver.subscribe(token: 1)
        let live = driver.goLive()
        let run = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        _ = driver.receive(.subscribed(head: 0), id: run[0].id)
        for revision in UInt64(1)...5 {
            driver.advance(.seconds(2))
            let memo = Driver.memo(Int(revision), revision: revision)
            let change = Change(revision: revision, kind: .created, memo: memo)
            #expect(driver.receive(.change(change), id: run[0].id).count == 1)  // the delivery only
            driver.advance(.seconds(1))
            // The deadline comes 1 s after the last frame: not silent long enough, checked again 2 s later.
            let check = driver.fire(.keepalive(attempt: 1))
            #expect(pings(driver, check).isEmpty)
            #expect(driver.scheduled(.keepalive(attempt: 1), in: check) == .seconds(2))
        }
    }

    @Test func answeredPingKeepsTheConnectionAndTheNextPingWaitsForTheNextSilence() {
        var driver = Driver(keepalive: .seconds(3))
        _ = driver.start()
        _ = driver.goLive()
        driver.advance(.seconds(3))
        let first = pings(driver, driver.fire(.keepalive(attempt: 1)))
        #expect(first.count == 1)

        // The pong: its id is no request's, so it answers nothing, but it is a frame.
        driver.advance(.milliseconds(200))
        #expect(driver.receive(.pong(nonce: UInt64(first[0])), id: first[0]).isEmpty)
        driver.advance(.milliseconds(2800))
        let check = driver.fire(.keepalive(attempt: 1))
        #expect(driver.closesConnection(check) == nil)
        #expect(pings(driver, check).isEmpty)
        #expect(driver.scheduled(.keepalive(attempt: 1), in: check) == .milliseconds(200))
        #expect(driver.machine.pingSentAt == nil)
        #expect(driver.machine.phase == .ready)

        driver.advance(.milliseconds(200))
        #expect(pings(driver, driver.fire(.keepalive(attempt: 1))).count == 1)
    }

    @Test func keepaliveOffNeverPingsAndLetsASilentConnectionBe() {
        var driver = Driver(keepalive: nil)
        _ = driver.start()
        let live = driver.goLive()
        #expect(!live.contains { if case .schedule(.keepalive, _) = $0 { true } else { false } })
        driver.advance(.seconds(600))
        #expect(driver.fire(.keepalive(attempt: 1)).isEmpty)
        #expect(driver.machine.phase == .ready)
    }

    @Test func lostConnectionCancelsItsKeepaliveAndAServerGoingAwayIsNotPinged() {
        var driver = Driver(keepalive: .seconds(3))
        _ = driver.start()
        _ = driver.goLive()
        driver.advance(.seconds(10))
        let ended = driver.end(.endOfStream)
        #expect(ended.contains { if case .cancel(.keepalive(attempt: 1)) = $0 { true } else { false } })
        _ = driver.fire(.reconnect)
        _ = driver.goLive()
        _ = driver.receive(.goingAway(code: .shuttingDown, message: "stopping"), id: 0)
        driver.advance(.seconds(3))
        // Nothing new may go to a server that said going-away; its own grace deadline ends the wait.
        let check = driver.fire(.keepalive(attempt: 2))
        #expect(pings(driver, check).isEmpty)
        #expect(driver.closesConnection(check) == nil)
    }
}
