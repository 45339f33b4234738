import Foundation
import MemoModel
import MemoTLS
import MemoWire
import Testing

@testable import MemoClient

/// A create sent right behind hello (`MemoConnection.connect(creating:)`, memo-client add): one round trip less,
/// and the same errors as before when the hello is refused.
@Suite struct ClientPipelinedHelloTests {
    typealias Driver = ClientMachineDriver

    static func create(_ content: String = "behind hello") -> Message {
        .create(id: UUID(), insertMicros: nil, updateMicros: nil, content: content)
    }

    /// Connected, TLS done: the hello (and what goes behind it) is sent.
    static func helloSent(_ driver: inout Driver) -> [Driver.Action] {
        driver.connected() + driver.handshakeDone()
    }

    @Test func aCreateBehindHelloGoesOutWithTheHelloAndIsNotSentAgainAtTheWelcome() throws {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(4))
        let create = driver.submit(Self.create(), behindHello: true)
        let read = driver.submit(.get(id: UUID()), behindHello: true)
        #expect(driver.sentIDs(create.actions + read.actions).isEmpty)
        // Only the create goes behind hello: a get's bytes are the same too, but only a create was asked for.
        #expect(driver.sentIDs(Self.helloSent(&driver)) == [ClientConnectionMachine.helloRequestID, create.id])
        let welcomed = driver.receive([Driver.welcome(revision: 4)])
        #expect(driver.sentIDs(welcomed) == [read.id])
        #expect(driver.firstOutcomes(welcomed).count == 1)
        let memo = Driver.memo(1, revision: 5)
        let answered = driver.completions(driver.receive(.memo(memo), id: create.id))
        #expect(answered.count == 1 && answered.first?.attempts == 1)
        guard case .success(.message(.memo(let got)))? = answered.first?.result else {
            Issue.record("expected the memo, got \(answered)")
            return
        }
        #expect(got == memo)
    }

    @Test func aCreateBehindARefusedHelloIsKnownNotDoneAndFailsWithTheRefusal() throws {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(4))
        let create = driver.submit(Self.create(), behindHello: true)
        #expect(driver.sentIDs(Self.helloSent(&driver)).contains(create.id))
        let refused = driver.receive(
            .error(code: .unsupportedVersion, message: "this server speaks 9 to 9"),
            id: ClientConnectionMachine.helloRequestID)
        let outcome = try #require(driver.firstOutcomes(refused).first)
        guard case .rejected(.unsupportedVersion, _)? = outcome else {
            Issue.record("expected the refusal as the first outcome, got \(String(describing: outcome))")
            return
        }
        // The server processed nothing behind the refused hello: not outcome-unknown (exit 7), never sent.
        let completed = driver.completions(refused)
        #expect(completed.map(\.id) == [create.id])
        #expect(completed.first?.attempts == 0)
        if case .failure(MemoError.outcomeUnknown)? = completed.first?.result {
            Issue.record("a create behind a refused hello was reported as outcome-unknown")
        }
    }

    @Test func aCreateBehindHelloWhoseCertificateIsRefusedIsKnownNotDone() throws {
        var driver = Driver()
        _ = driver.start(waitingFor: .seconds(4))
        let create = driver.submit(Self.create(), behindHello: true)
        #expect(driver.sentIDs(Self.helloSent(&driver)).contains(create.id))
        // TLS 1.3: the server checks our certificate after our side finished, so hello and the create went out.
        let ended = driver.end(.tls(TLSError(kind: .certificateRevoked, operation: "TLS handshake (client)")))
        let completed = driver.completions(ended)
        #expect(completed.map(\.id) == [create.id])
        #expect(completed.first?.attempts == 0)
        if case .failure(MemoError.outcomeUnknown)? = completed.first?.result {
            Issue.record("a create behind a refused certificate was reported as outcome-unknown")
        }
    }

    @Test func aCreateBehindHelloWhoseConnectionIsLostBeforeTheWelcomeIsOutcomeUnknown() throws {
        var driver = Driver()
        _ = driver.start()
        let create = driver.submit(Self.create(), behindHello: true)
        #expect(driver.sentIDs(Self.helloSent(&driver)).contains(create.id))
        // The server may have applied it and then died before its welcome reached us.
        _ = driver.end(.endOfStream)
        let closed = driver.completions(driver.close())
        #expect(closed.map(\.id) == [create.id])
        guard case .failure(MemoError.outcomeUnknown)? = closed.first?.result else {
            Issue.record("expected outcome-unknown, got \(closed)")
            return
        }
    }
}
