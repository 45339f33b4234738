import Foundation
import MemoClientCLI
import MemoModel
import MemoTLS
import MemoWire
import Testing

@testable import MemoClient

/// The client connection's lifecycle, event by event, with no socket, timer or clock: every transition of
/// `ClientConnectionMachine`, the ugly ones included.
@Suite("Client connection machine")
struct ClientConnectionMachineTests {
    typealias Driver = ClientMachineDriver

    @Test func firstConnectionGoesFromConnectingThroughHelloToLiveAndClosesPolitely() {
        var driver = Driver()
        let started = driver.start()
        #expect(driver.connects(started) == ["alpha:7420"])
        #expect(driver.scheduled(.connect(attempt: 1), in: started) == .seconds(4))
        #expect(started.contains { if case .reportAttempts(1) = $0 { true } else { false } })
        #expect(driver.machine.phase == .connecting)

        #expect(driver.connected().isEmpty)
        #expect(driver.machine.phase == .handshaking)
        let hello = driver.sent(driver.handshakeDone())
        #expect(hello.map(\.id) == [ClientConnectionMachine.helloRequestID])
        guard case .hello(_, _, let client)? = hello.first?.message else {
            Issue.record("no hello")
            return
        }
        #expect(client == "memo-client")
        #expect(driver.machine.phase == .awaitingWelcome)

        let welcomed = driver.receive([Driver.welcome(revision: 42)])
        #expect(driver.machine.phase == .ready)
        #expect(driver.states(welcomed) == [.live])
        #expect(welcomed.contains { if case .cancel(.connect(attempt: 1)) = $0 { true } else { false } })
        #expect(welcomed.contains { if case .welcomed(let welcome) = $0 { welcome.revision == 42 } else { false } })
        #expect(welcomed.contains { if case .reportAttempts(0) = $0 { true } else { false } })

        let closed = driver.close()
        #expect(driver.closesConnection(closed) == true)
        #expect(driver.states(closed) == [.offline])
        #expect(driver.machine.phase == .idle)
        #expect(driver.connects(closed).isEmpty)
    }

    @Test func welcomeThatDoesNotComeTimesTheAttemptOutAndTheCallerHearsIt() {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(30))
        _ = driver.connected()
        _ = driver.handshakeDone()
        // A deadline of an earlier attempt means nothing.
        #expect(driver.fire(.connect(attempt: 0)).isEmpty)
        driver.advance(.seconds(4))
        let timedOut = driver.fire(.connect(attempt: 1))
        #expect(driver.closesConnection(timedOut) == false)
        #expect(driver.firstOutcomes(timedOut).map { $0?.name } == ["timedOut"])
        #expect(driver.machine.closed)
        #expect(driver.scheduled(.reconnect, in: timedOut) == nil)
    }

    @Test func welcomeTimeoutOnceLiveBeforeIsRetriedWithBackoff() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive()
        driver.advance(.seconds(10))
        _ = driver.end(.endOfStream)
        _ = driver.fire(.reconnect)
        _ = driver.connected()
        _ = driver.handshakeDone()
        let timedOut = driver.fire(.connect(attempt: 2))
        #expect(driver.failures(timedOut).map { $0?.name } == ["timedOut"])
        #expect(driver.scheduled(.reconnect, in: timedOut) == .milliseconds(100))
        #expect(driver.machine.phase == .idle)
        // A timed-out welcome that comes after all is not taken.
        #expect(driver.receive([Driver.welcome()]).isEmpty)
    }

    @Test func deadlinesAfterCloseDoNothing() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive()
        let request = driver.submit(.get(id: Driver.memo(1, revision: 1).id))
        _ = driver.receive([Driver.frame(.goingAway(code: .shuttingDown, message: "bye"), id: 0)])
        let closed = driver.close()
        let failed = driver.completions(closed)
        #expect(failed.map(\.id) == [request.id])
        #expect(failed.first.map { if case .failure(ClientError.closed) = $0.result { true } else { false } } == true)
        #expect(closed.contains { if case .cancel(.request(request.id)) = $0 { true } else { false } })
        for deadline: ClientConnectionMachine.Deadline in [
            .request(request.id), .connect(attempt: 1), .goingAway(attempt: 1), .reconnect,
        ] {
            #expect(driver.fire(deadline).isEmpty, "\(deadline)")
        }
        // Nor does anything that comes later.
        #expect(driver.end(.endOfStream).isEmpty)
        let late = driver.submit(.list)
        #expect(driver.completions(late.actions).map(\.attempts) == [0])
        #expect(driver.close().isEmpty)
    }

    @Test func lostConnectionResendsUnansweredRequestsAndRefusedFramesAreNeverResent() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive(maxFrameSize: 4096)
        let get = driver.submit(.get(id: Driver.memo(1, revision: 1).id))
        let create = driver.submit(.create(id: UUID(), insertMicros: nil, updateMicros: nil, content: "two"))
        let list = driver.submit(.list)
        #expect(driver.sentIDs(get.actions + create.actions + list.actions) == [get.id, create.id, list.id])
        // Over the server's frame limit: failed here, never sent.
        let huge = driver.submit(.create(
            id: UUID(), insertMicros: nil, updateMicros: nil, content: String(repeating: "x", count: 5000)))
        #expect(driver.sentIDs(huge.actions).isEmpty)
        #expect(driver.completions(huge.actions).first.map {
            if case .failure(ClientError.server(.frameTooLarge, _)) = $0.result { true } else { false }
        } == true)

        // The get is answered, then the connection dies: the create and the list go out again on the next one.
        _ = driver.receive(.memo(Driver.memo(1, revision: 1)), id: get.id)
        driver.advance(.seconds(1))
        let lost = driver.end(.io("connection reset by peer"))
        #expect(driver.failures(lost).map { $0?.name } == ["lost"])
        #expect(driver.completions(lost).isEmpty)
        _ = driver.fire(.reconnect)
        let resent = driver.goLive(maxFrameSize: 4096)
        #expect(driver.sentIDs(resent).filter { $0 != ClientConnectionMachine.helloRequestID } == [create.id, list.id])

        // The server refuses the create's frame (malformed) and closes: the create fails for good, the list
        // behind it in the pipeline did nothing wrong and is resent once more.
        let refused = driver.receive(.error(code: .malformedFrame, message: "bad"), id: create.id)
        #expect(driver.completions(refused).map(\.id) == [create.id])
        #expect(driver.completions(refused).first?.attempts == 2)
        #expect(driver.closesConnection(refused) == true)
        _ = driver.fire(.reconnect)
        let third = driver.goLive()
        #expect(driver.sentIDs(third).filter { $0 != ClientConnectionMachine.helloRequestID } == [list.id])

        // A refusal with no request id fails every request sent on that connection (no way to tell which), and
        // none of them is sent again.
        let ping = driver.submit(.ping(nonce: 7))
        let refusedAll = driver.receive(.error(code: .duplicateRequestID, message: "reused"), id: 0)
        #expect(Set(driver.completions(refusedAll).map(\.id)) == [list.id, ping.id])
        #expect(driver.completions(refusedAll).map(\.attempts).sorted() == [1, 3])
        _ = driver.fire(.reconnect)
        #expect(driver.sentIDs(driver.goLive()) == [ClientConnectionMachine.helloRequestID])
        #expect(driver.table.pendingCount == 0)
    }

    @Test func goingAwayDuringAResendStopsNewSendsUntilTheServerCloses() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive()
        let first = driver.submit(.ping(nonce: 1))
        let second = driver.submit(.ping(nonce: 2))
        driver.advance(.seconds(6))
        _ = driver.end(.endOfStream)
        _ = driver.fire(.reconnect)
        _ = driver.connected()
        _ = driver.handshakeDone()
        // The welcome, the resend it triggers, and a going-away in the same read.
        let read = driver.receive([
            Driver.welcome(), Driver.frame(.goingAway(code: .shuttingDown, message: "restarting"), id: 0),
        ])
        #expect(driver.sentIDs(read) == [first.id, second.id])
        #expect(driver.states(read) == [.live, .reconnecting])
        #expect(driver.scheduled(.goingAway(attempt: 2), in: read) == ClientConnectionMachine.goingAwayGrace)
        #expect(!driver.machine.isReady)

        // Nothing new goes out on a connection that is going away; its answers still come.
        let third = driver.submit(.ping(nonce: 3))
        #expect(driver.sentIDs(third.actions).isEmpty)
        let answered = driver.receive(.pong(nonce: 1), id: first.id)
        #expect(driver.completions(answered).map(\.id) == [first.id])
        #expect(driver.completions(answered).first?.attempts == 2)

        // The server never closes: the grace ends it, and the rest goes out on the next connection.
        let grace = driver.fire(.goingAway(attempt: 2))
        #expect(driver.closesConnection(grace) == true)
        #expect(driver.failures(grace).first??.name == "lost")
        _ = driver.fire(.reconnect)
        let next = driver.goLive()
        #expect(driver.sentIDs(next).filter { $0 != ClientConnectionMachine.helloRequestID } == [second.id, third.id])
        #expect(driver.table.attempts(of: second.id) == 3)
        #expect(driver.table.attempts(of: third.id) == 1)
    }

    @Test func lateEventsOfAnEarlierConnectionAreIgnored() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive()
        let request = driver.submit(.ping(nonce: 1))
        // We close the first connection (the server broke a rule); its own end and frames may still be on the way.
        _ = driver.receive(.error(code: .internalError, message: "oops"), id: 0)
        _ = driver.fire(.reconnect)
        #expect(driver.machine.attempt == 2)
        #expect(driver.end(.endOfStream, attempt: 1).isEmpty)
        #expect(driver.receive([Driver.frame(.pong(nonce: 1), id: request.id)], attempt: 1).isEmpty)
        #expect(driver.handshakeDone(attempt: 1).isEmpty)
        #expect(driver.machine.phase == .connecting)
        // The request waits for the new connection, and is answered only by what comes on it.
        #expect(driver.sentIDs(driver.goLive()) == [ClientConnectionMachine.helloRequestID, request.id])
        let pong = Driver.frame(.pong(nonce: 1), id: request.id)
        #expect(driver.receive([pong], attempt: 1).isEmpty)
        #expect(driver.completions(driver.receive([pong])).map(\.attempts) == [2])
    }

    @Test func backoffGrowsWhileAttemptsFailAndResetsOnlyAfterFiveHealthySeconds() {
        var driver = Driver(policy: ReconnectPolicy(
            initialDelay: .milliseconds(100), maximumDelay: .seconds(1), multiplier: 2, healthyAfter: .seconds(5)))
        _ = driver.start()
        var delays: [Duration] = []
        for _ in 0..<6 {
            let failed = driver.end(.io("connection refused"))
            delays.append(driver.scheduled(.reconnect, in: failed) ?? .zero)
            driver.advance(delays.last!)
            #expect(driver.connects(driver.fire(.reconnect)) == ["alpha:7420"])
        }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                           .seconds(1), .seconds(1)])

        // Welcomed, then lost after 4.9 s: not healthy, the backoff goes on growing from where it was.
        _ = driver.goLive()
        driver.advance(.milliseconds(4900))
        #expect(driver.scheduled(.reconnect, in: driver.end(.endOfStream)) == .seconds(1))
        _ = driver.fire(.reconnect)

        // Up for 5 s: the next loss is retried at once, and the backoff starts again from the beginning.
        _ = driver.goLive()
        driver.advance(.seconds(5))
        #expect(driver.scheduled(.reconnect, in: driver.end(.endOfStream)) == .zero)
        _ = driver.fire(.reconnect)
        #expect(driver.scheduled(.reconnect, in: driver.end(.io("connection refused"))) == .milliseconds(100))
    }

    @Test func failoverTriesEachAddressInTurnBeforeTheFirstConnectionFails() {
        var driver = Driver(servers: "alpha:7420, beta:7421")
        let started = driver.start(waitingFor: .milliseconds(500))
        #expect(driver.connects(started) == ["alpha:7420"])
        // alpha refuses: beta at once, before the caller hears anything.
        let refused = driver.end(.io("connection refused"))
        #expect(driver.scheduled(.reconnect, in: refused) == .zero)
        #expect(driver.firstOutcomes(refused).isEmpty)
        #expect(driver.connects(driver.fire(.reconnect)) == ["beta:7421"])
        // beta refuses too: both tried; a server not reachable yet is worth waiting for, until the deadline.
        let again = driver.end(.io("connection refused"))
        #expect(driver.firstOutcomes(again).isEmpty)
        #expect(driver.scheduled(.reconnect, in: again) == .milliseconds(200))
        driver.advance(.milliseconds(200))
        #expect(driver.connects(driver.fire(.reconnect)) == ["alpha:7420"])
        _ = driver.goLive()
        // Live on alpha, then lost: the next attempt goes to beta, where the subscription resumes.
        driver.advance(.seconds(10))
        _ = driver.end(.endOfStream)
        #expect(driver.connects(driver.fire(.reconnect)) == ["beta:7421"])

        // Past the deadline, the caller hears the failure.
        var late = Driver(servers: "alpha:7420,beta:7421")
        _ = late.start(waitingFor: .milliseconds(15))
        _ = late.end(.io("connection refused"))
        _ = late.fire(.reconnect)
        let failed = late.end(.io("connection refused"))
        #expect(failed.contains {
            if case .firstOutcome(.unreachable("connection refused")?) = $0 { true } else { false }
        })
        #expect(late.machine.closed)
    }

    @Test func subscriptionRestartsOnTheNextConnectionAfterTheLastAppliedRevision() {
        var driver = Driver()
        _ = driver.start()
        driver.starts[7] = .some(nil)
        #expect(driver.subscribe(token: 7).isEmpty)  // not sent before the welcome
        let live = driver.goLive(revision: 3)
        let subscribe = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        #expect(subscribe.map(\.message) == [.subscribe(after: nil)])
        let firstRun = subscribe[0].id

        // The snapshot and a change in one read: one batch, in order; the owner applies them.
        let change = Change(revision: 4, kind: .created, memo: Driver.memo(1, revision: 4))
        let read = driver.receive([
            Driver.frame(.snapshot(revision: 3, last: true, memos: []), id: firstRun),
            Driver.frame(.change(change), id: firstRun),
        ])
        #expect(driver.deliveries(read).map(\.token) == [7])
        #expect(driver.deliveries(read).first?.events == [
            .snapshot(revision: 3, last: true, memos: []), .change(change),
        ])
        driver.starts[7] = 4

        driver.advance(.seconds(1))
        _ = driver.end(.endOfStream)
        _ = driver.fire(.reconnect)
        let resumed = driver.goLive(revision: 9)
        let again = driver.sent(resumed).filter { $0.id != ClientConnectionMachine.helloRequestID }
        #expect(again.map(\.message) == [.subscribe(after: 4)])
        #expect(again[0].id != firstRun)
        // A late frame for the earlier run is not delivered as this one's.
        #expect(driver.deliveries(driver.receive(.change(change), id: firstRun)).isEmpty)
        #expect(driver.deliveries(driver.receive(.subscribed(head: 9), id: again[0].id)).map(\.events)
            == [[.subscribed(head: 9)]])

        // Unsubscribed: the server is told, and nothing of it comes through any more.
        let stop = driver.unsubscribe(7)
        #expect(driver.sent(stop).map(\.message) == [.unsubscribe(subscription: again[0].id)])
        #expect(driver.deliveries(driver.receive(.change(change), id: again[0].id)).isEmpty)
    }

    @Test func historyGoneIsDeliveredThenTheSubscriptionStartsAgainFromASnapshot() {
        var driver = Driver()
        _ = driver.start()
        driver.starts[1] = 5
        _ = driver.subscribe(token: 1)
        let live = driver.goLive(revision: 900)
        let run = driver.sent(live).filter { $0.id != ClientConnectionMachine.helloRequestID }
        #expect(run.map(\.message) == [.subscribe(after: 5)])

        let gone = driver.receive(.historyGone(requested: 5, oldestAvailable: 800), id: run[0].id)
        // The owner hears it first (and forgets its revision), then the subscription is sent again: the order of
        // the actions is what lets the new `subscribe` ask for a snapshot.
        guard let deliverAt = gone.firstIndex(where: { if case .deliver = $0 { true } else { false } }),
              let subscribeAt = gone.firstIndex(where: { if case .subscribe = $0 { true } else { false } })
        else {
            Issue.record("no delivery or no new subscribe: \(gone)")
            return
        }
        #expect(deliverAt < subscribeAt)
        #expect(driver.deliveries(gone).first?.events == [.historyGone(requested: 5, oldestAvailable: 800)])
        driver.starts[1] = .some(nil)
        let restarted = driver.sent(gone)
        #expect(restarted.map(\.message) == [.subscribe(after: nil)])
        #expect(restarted[0].id != run[0].id)

        // A refused subscription is delivered and not restarted.
        let refused = driver.receive(.error(code: .permissionDenied, message: "no"), id: restarted[0].id)
        #expect(driver.deliveries(refused).first?.events == [.failed(code: .permissionDenied, message: "no")])
        #expect(driver.sent(refused).isEmpty)
    }

    @Test func tlsRefusalEndsAFirstConnectionWithExitFive() {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(30))
        _ = driver.connected()
        let refusal = TLSError(kind: .certificateRevoked, operation: "TLS handshake (client)")
        let ended = driver.end(.tls(refusal))
        // Not retried: certificates do not fix themselves.
        #expect(driver.scheduled(.reconnect, in: ended) == nil)
        let outcome = ended.first { if case .firstOutcome = $0 { true } else { false } }
        guard case .firstOutcome(let end?)? = outcome else {
            Issue.record("no first outcome in \(ended)")
            return
        }
        let error = MemoConnection.error(for: end, configuration: driver.machine.configuration)
        #expect(ExitCode(error) == .refused)
        #expect(ExitCode.refused.rawValue == 5)
        #expect(driver.machine.closed)
    }

    @Test func tlsRefusalOnceLiveFailsWaitingRequestsAndWaitsBeforeTheNextTry() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.goLive()
        let waiting = driver.submit(.list)
        driver.advance(.seconds(1))
        let ended = driver.end(.tls(TLSError(kind: .certificateExpired, operation: "TLS record")))
        let failed = driver.completions(ended)
        #expect(failed.map(\.id) == [waiting.id])
        if case .failure(let error)? = failed.first?.result {
            #expect(ExitCode(error).rawValue == 5)
        } else {
            Issue.record("the waiting request was not failed")
        }
        #expect(driver.scheduled(.reconnect, in: ended) == .seconds(30))
        #expect(driver.states(ended).last == .offline)
        #expect(!driver.machine.closed)
    }

    @Test func firstFrameOtherThanWelcomeRejectsOrLosesTheConnection() {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(30))
        _ = driver.connected()
        _ = driver.handshakeDone()
        let full = driver.receive(.error(code: .tooManyConnections, message: "full"), id: 1)
        #expect(driver.closesConnection(full) == false)
        // Full is worth waiting for while the caller's deadline allows.
        #expect(driver.firstOutcomes(full).isEmpty)
        #expect(driver.failures(full).first??.name == "rejected")
        _ = driver.fire(.reconnect)
        _ = driver.connected()
        _ = driver.handshakeDone()
        let odd = driver.receive(.pong(nonce: 1), id: 1)
        #expect(driver.firstOutcomes(odd).map { $0?.name } == ["lost"])

        // Close-notify before the welcome is a server shutting down; after it, a lost connection.
        var closing = Driver()
        _ = closing.start()
        _ = closing.connected()
        _ = closing.handshakeDone()
        #expect(closing.failures(closing.end(.closeNotify)).first??.name == "rejected")
        _ = closing.fire(.reconnect)
        _ = closing.goLive()
        #expect(closing.failures(closing.end(.closeNotify)).first??.name == "lost")
    }

    @Test func requestDeadlineSaysWhyTheServerCouldNotBeReached() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.end(.io("connection refused"))
        let request = driver.submit(.list, timeout: .seconds(2))
        // A request made while the first connection is backing off hurries the next attempt.
        #expect(driver.connects(request.actions) == ["alpha:7420"])
        #expect(driver.scheduled(.request(request.id), in: request.actions) == .seconds(2))
        _ = driver.end(.io("connection refused"))
        let expired = driver.completions(driver.fire(.request(request.id)))
        guard case .failure(ClientError.unreachable(_, let reason))? = expired.first?.result else {
            Issue.record("expected unreachable, got \(expired)")
            return
        }
        #expect(reason == "connection refused")

        // Once live, an unanswered request just times out.
        _ = driver.fire(.reconnect)
        _ = driver.goLive()
        let slow = driver.submit(.list, timeout: .seconds(3))
        let timedOut = driver.completions(driver.fire(.request(slow.id)))
        guard case .failure(ClientError.timedOut(_, let seconds))? = timedOut.first?.result else {
            Issue.record("expected a timeout, got \(timedOut)")
            return
        }
        #expect(seconds == 3)
        // Its answer, when it comes, belongs to nobody.
        #expect(driver.completions(driver.receive(.memos(revision: 1, last: true, memos: []), id: slow.id)).isEmpty)
    }

    @Test func aWriteSentAndNeverAnsweredIsOutcomeUnknownAndOneNeverSentIsUnreachable() {
        var driver = Driver()
        _ = driver.start()
        _ = driver.end(.io("connection refused"))
        // Never sent: no connection came up before its deadline.
        let unsent = driver.submit(.create(id: UUID(), insertMicros: nil, updateMicros: nil, content: "a"),
                                   timeout: .seconds(2))
        _ = driver.end(.io("connection refused"))
        let notSent = driver.completions(driver.fire(.request(unsent.id)))
        guard case .failure(ClientError.unreachable)? = notSent.first?.result else {
            Issue.record("expected unreachable, got \(notSent)")
            return
        }

        // Sent on a live connection, then its deadline passed: it may have been done.
        _ = driver.fire(.reconnect)
        _ = driver.goLive()
        let create = driver.submit(.create(id: UUID(), insertMicros: nil, updateMicros: nil, content: "b"),
                                   timeout: .seconds(3))
        #expect(driver.sentIDs(create.actions) == [create.id])
        let expired = driver.completions(driver.fire(.request(create.id)))
        guard case .failure(MemoError.outcomeUnknown(let message))? = expired.first?.result else {
            Issue.record("expected outcome unknown, got \(expired)")
            return
        }
        #expect(message.contains("may or may not have been applied"))

        // Sent, the connection lost, and not sent again before its deadline: still unknown, not unreachable.
        let delete = driver.submit(.delete(id: UUID(), expectedRevision: 4), timeout: .seconds(3))
        _ = driver.end(.io("connection reset by peer"))
        _ = driver.fire(.reconnect)
        _ = driver.end(.io("connection refused"))
        let lost = driver.completions(driver.fire(.request(delete.id)))
        guard case .failure(MemoError.outcomeUnknown)? = lost.first?.result else {
            Issue.record("expected outcome unknown, got \(lost)")
            return
        }

        // The server's own 505 answer is the same outcome.
        _ = driver.fire(.reconnect)
        _ = driver.goLive()
        let update = driver.submit(.update(id: UUID(), expectedRevision: 2, content: "c"))
        let answered = driver.completions(driver.receive(
            .error(code: .outcomeUnknown, message: "outcome unknown: the commit's connection broke"), id: update.id))
        guard case .failure(MemoError.outcomeUnknown("the commit's connection broke"))? = answered.first?.result else {
            Issue.record("expected outcome unknown, got \(answered)")
            return
        }
        // A read sent and never answered is still just a timeout.
        let read = driver.submit(.list, timeout: .seconds(1))
        let timedOut = driver.completions(driver.fire(.request(read.id)))
        guard case .failure(ClientError.timedOut)? = timedOut.first?.result else {
            Issue.record("expected a timeout, got \(timedOut)")
            return
        }
    }
}
