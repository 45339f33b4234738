import Foundation
import MemoModel
import MemoTLS
import MemoWire
import Testing

@testable import MemoClient

/// The request table alone: requests, answers and subscriptions against a connection described by hand (a
/// `Link`), with no connection machine, socket or clock.
@Suite("Client request table")
struct RequestTableTests {
    typealias Driver = ClientMachineDriver
    typealias Link = ClientConnectionMachine.Link

    static let welcome = Welcome(
        version: WireProtocol.version, revision: 0, maxFrameSize: 1 << 20, role: .readWrite, serverName: "test")

    static func ready(attempt: Int = 1) -> Link {
        Link(isReady: true, isConnected: true, attempt: attempt, welcome: welcome, lastFailure: nil, closed: false)
    }

    static let offline = Link(
        isReady: false, isConnected: false, attempt: 1, welcome: nil,
        lastFailure: .unreachable("connection refused"), closed: false)

    var table = RequestTable(configuration: Driver.configuration())

    /// The ids of the frames the actions send, in order.
    func sentIDs(_ actions: [RequestTable.Action]) -> [UInt32] {
        actions.compactMap { action in
            switch action {
            case .send(let bytes):
                var decoder = FrameDecoder()
                decoder.append(bytes)
                return try! decoder.next()!.requestID
            case .subscribe(_, let id): return id
            default: return nil
            }
        }
    }

    func completed(_ actions: [RequestTable.Action]) -> [(id: UInt32, error: (any Error)?, attempts: Int)] {
        actions.compactMap { action in
            guard case .complete(let id, let result, let attempts) = action else { return nil }
            if case .failure(let error) = result { return (id, error, attempts) }
            return (id, nil, attempts)
        }
    }

    func closeReason(_ actions: [RequestTable.Action]) -> (end: ConnectionEnd, polite: Bool)? {
        for case .closeConnection(let end, let polite) in actions { return (end, polite) }
        return nil
    }

    @Test mutating func aRequestWaitsForAReadyConnectionIsResentAfterALossAndCountsItsAttempts() {
        let (id, queued) = table.submit(.ping(nonce: 1), timeout: nil, link: Self.offline)
        #expect(sentIDs(queued).isEmpty)
        #expect(queued.contains { if case .schedule(request: id, after: .seconds(10)) = $0 { true } else { false } })
        #expect(table.pendingCount == 1)
        #expect(sentIDs(table.handle(.ready, link: Self.ready())) == [id])
        // Ready again without a loss: nothing goes twice.
        #expect(sentIDs(table.handle(.ready, link: Self.ready())).isEmpty)
        _ = table.handle(.lost, link: Self.offline)
        #expect(sentIDs(table.handle(.ready, link: Self.ready(attempt: 2))) == [id])
        #expect(table.attempts(of: id) == 2)
        let answered = table.handle(.answer([Driver.frame(.pong(nonce: 1), id: id)]), link: Self.ready(attempt: 2))
        #expect(completed(answered).map(\.id) == [id])
        #expect(completed(answered).first?.error == nil)
        #expect(answered.contains { if case .cancel(request: id) = $0 { true } else { false } })
        #expect(table.pendingCount == 0)
    }

    @Test mutating func idsAreNeverHellosAndAPingTakesOneNoRequestHas() {
        let first = table.submit(.ping(nonce: 1), timeout: nil, link: Self.ready()).id
        let ping = sentIDs(table.handle(.ping, link: Self.ready()))
        let second = table.submit(.ping(nonce: 2), timeout: nil, link: Self.ready()).id
        #expect(ping.count == 1)
        #expect(Set([first, second] + ping).count == 3)
        #expect(!([first, second] + ping).contains(ClientConnectionMachine.helloRequestID))
        // The pong answers no request and is dropped.
        let pong = table.handle(.answer([Driver.frame(.pong(nonce: 0), id: ping[0])]), link: Self.ready())
        #expect(pong.isEmpty)
        #expect(table.pendingCount == 2)
    }

    @Test mutating func closingFailsAWriteSentAsOutcomeUnknownAndTheRestAsClosedAndForgetsSubscriptions() {
        let write = table.submit(.create(id: nil, insertMicros: nil, content: "a"), timeout: nil, link: Self.ready()).id
        let read = table.submit(.list, timeout: nil, link: Self.offline).id
        _ = table.subscribe(token: 4, link: Self.ready())
        #expect(table.isSubscribed(4))
        let closed = completed(table.handle(.close, link: Self.offline))
        #expect(closed.map(\.id) == [write, read])
        guard case .outcomeUnknown? = closed.first?.error as? MemoError else {
            Issue.record("the sent write failed as \(String(describing: closed.first?.error))")
            return
        }
        guard case .closed? = closed.last?.error as? ClientError else {
            Issue.record("the unsent read failed as \(String(describing: closed.last?.error))")
            return
        }
        #expect(!table.isSubscribed(4))
        #expect(table.pendingCount == 0)
    }

    @Test mutating func anUnsentRequestThatExpiresBeforeAnyWelcomeSaysWhyTheServerWasNotReached() {
        let id = table.submit(.list, timeout: .seconds(2), link: Self.offline).id
        let expired = completed(table.expire(id, link: Self.offline))
        guard case .unreachable(_, let reason)? = expired.first?.error as? ClientError else {
            Issue.record("expired as \(String(describing: expired.first?.error))")
            return
        }
        #expect(reason == "connection refused")
        #expect(table.expire(id, link: Self.offline).isEmpty, "once")
    }

    @Test mutating func aFrameRefusedWithoutItsIDFailsWhatThisConnectionSentAndAsksToCloseIt() {
        let earlier = table.submit(.ping(nonce: 1), timeout: nil, link: Self.offline).id
        let sent = table.submit(.ping(nonce: 2), timeout: nil, link: Self.ready(attempt: 2)).id
        let refused = table.handle(
            .answer([Driver.frame(.error(code: .malformedFrame, message: "bad"), id: 0)]), link: Self.ready(attempt: 2))
        #expect(completed(refused).map(\.id) == [sent])
        guard case (.lost, true)? = closeReason(refused) else {
            Issue.record("no polite close as lost: \(String(describing: closeReason(refused)))")
            return
        }
        // The one not sent on that connection is still waiting (it goes out on the next).
        #expect(table.attempts(of: earlier) == 0)
    }

    @Test mutating func subscriptionEventsOfOneReadComeAsOneBatchAndHistoryGoneRestartsIt() {
        _ = table.subscribe(token: 9, link: Self.offline)
        let run = sentIDs(table.handle(.ready, link: Self.ready()))
        #expect(run.count == 1)
        let change = Change(revision: 3, kind: .created, memo: Driver.memo(1, revision: 3))
        let read = table.handle(.answer([
            Driver.frame(.subscribed(head: 2), id: run[0]), Driver.frame(.change(change), id: run[0]),
        ]), link: Self.ready())
        #expect(read.count == 1)
        guard case .deliver(9, let events)? = read.first else {
            Issue.record("no delivery: \(read)")
            return
        }
        #expect(events == [.subscribed(head: 2), .change(change)])
        let gone = table.handle(
            .answer([Driver.frame(.historyGone(requested: 3, oldestAvailable: 7), id: run[0])]), link: Self.ready())
        let again = sentIDs(gone)
        #expect(again.count == 1 && again != run, "restarted under a new id")
        #expect(closeReason(gone) == nil)
    }

    @Test mutating func theServersOwnTroubleUnderASubscriptionClosesTheConnectionAfterWhatCameBefore() {
        _ = table.subscribe(token: 2, link: Self.offline)
        let run = sentIDs(table.handle(.ready, link: Self.ready()))
        let trouble = table.handle(.answer([
            Driver.frame(.subscribed(head: 1), id: run[0]),
            Driver.frame(.error(code: .storageUnavailable, message: "down"), id: run[0]),
            Driver.frame(.subscribed(head: 5), id: run[0]),
        ]), link: Self.ready())
        guard case .deliver(2, let events)? = trouble.first else {
            Issue.record("no delivery: \(trouble)")
            return
        }
        #expect(events == [.subscribed(head: 1)])
        guard case (.lost, true)? = closeReason(trouble) else {
            Issue.record("no polite close as lost")
            return
        }
        #expect(trouble.count == 2, "nothing after the close")
        #expect(table.isSubscribed(2))
    }
}

/// The connection machine alone: what it tells the request table, and when.
@Suite("Client connection machine alone")
struct ClientConnectionMachineAloneTests {
    typealias Driver = ClientMachineDriver

    var machine = ClientConnectionMachine(configuration: Driver.configuration()) { 1 }
    var now = ContinuousClock.now

    func told(_ actions: [ClientConnectionMachine.Action]) -> [(event: String, ready: Bool)] {
        actions.compactMap { action in
            guard case .requests(let event, let link) = action else { return nil }
            return ("\(event)".prefix { $0 != "(" }.description, link.isReady)
        }
    }

    mutating func goLive(frames extra: [Frame] = []) -> [ClientConnectionMachine.Action] {
        _ = machine.start(firstDeadline: nil, now: now)
        _ = machine.connected(attempt: 1)
        _ = machine.handshakeDone(attempt: 1)
        return machine.received([Driver.welcome()] + extra, attempt: 1, now: now)
    }

    @Test mutating func theTableHearsReadyWithAReadyLinkEvenWhenAGoingAwayFollowsInTheSameRead() {
        let read = goLive(frames: [Driver.frame(.goingAway(code: .shuttingDown, message: "bye"), id: 0)])
        #expect(told(read).map(\.event) == ["ready"])
        #expect(told(read).first?.ready == true)
        #expect(!machine.link.isReady)
        #expect(machine.link.isConnected)
    }

    @Test mutating func answersGoToTheTableAndGoingAwayDoesNot() {
        _ = goLive()
        let read = machine.received([
            Driver.frame(.pong(nonce: 1), id: 5), Driver.frame(.goingAway(code: .shuttingDown, message: ""), id: 0),
        ], attempt: 1, now: now)
        guard case .requests(.answer(let frames), _)? = read.first(where: {
            if case .requests = $0 { true } else { false }
        }) else {
            Issue.record("no answer for the table: \(read)")
            return
        }
        #expect(frames.map(\.requestID) == [5])
    }

    @Test mutating func aLostConnectionTellsTheTableLostAndATLSRefusalAlsoFailsItsRequests() {
        _ = goLive()
        #expect(told(machine.transportEnded(.endOfStream, attempt: 1, now: now)).map(\.event) == ["lost"])
        _ = machine.deadlinePassed(.reconnect, now: now)
        _ = machine.connected(attempt: 2)
        let refused = machine.transportEnded(
            .tls(TLSError(kind: .unknownCA, operation: "TLS handshake (client)")), attempt: 2, now: now)
        #expect(told(refused).map(\.event) == ["lost", "failAll"])
    }

    @Test mutating func closingTellsTheTableToCloseAndTheKeepaliveAsksItForAPing() {
        _ = goLive()
        now += ClientConfiguration.defaultKeepalive
        let check = machine.deadlinePassed(.keepalive(attempt: 1), now: now)
        #expect(told(check).map(\.event) == ["ping"])
        #expect(machine.pingSentAt == now)
        #expect(told(machine.close()).map(\.event) == ["lost", "close"])
        #expect(machine.close(as: .lost("late"), polite: true, now: now).isEmpty, "no connection to close")
    }
}
