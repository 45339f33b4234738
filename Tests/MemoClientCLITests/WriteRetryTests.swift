import Foundation
import MemoClient
import MemoModel
import MemoTLS
import Testing

@testable import MemoClientCLI

@Suite("memo-client: retrying a write whose outcome is unknown")
struct WriteRetryTests {
    private let id = UUID()

    @Test func anUnknownTryIsMadeAgainAndTheRetrysAnswerIsTheResult() async throws {
        let retry = WriteRetry(deadline: .now + .seconds(3600))
        var tries: [Bool] = []
        let answer = try await retry.run { afterUnknown, _ in
            tries.append(afterUnknown)
            if tries.count < 3 { throw MemoError.outcomeUnknown("lost") }
            return "done"
        }
        #expect(answer == "done")
        #expect(tries == [false, true, true])
    }

    @Test func aDefiniteFailureOfTheFirstTryIsNotRetried() async {
        let retry = WriteRetry(deadline: .now + .seconds(3600))
        var tries = 0
        await #expect(throws: ClientError.self) {
            try await retry.run { _, _ -> String in
                tries += 1
                throw ClientError.unreachable(server: "s", reason: "connection refused")
            }
        }
        #expect(tries == 1)
    }

    @Test func afterAnUnknownTryAnAnswerThatSettlesItIsThrownAndTroubleKeepsItUnknown() async {
        // Deadlines far away, except where the deadline is the point: a loaded machine may hold a task for long.
        let retry = WriteRetry(deadline: .now + .seconds(3600))
        var tries = 0
        await #expect(throws: MemoError.conflict(id: id, expected: 3, actual: 4)) {
            try await retry.run { _, _ -> String in
                tries += 1
                if tries == 1 { throw MemoError.outcomeUnknown("lost") }
                throw MemoError.conflict(id: id, expected: 3, actual: 4)
            }
        }
        // A retry that could not be sent (no connection) says nothing of the first try: it is tried again.
        var unsentTries = 0
        let answer = try? await retry.run { _, _ -> String in
            unsentTries += 1
            if unsentTries == 1 { throw MemoError.outcomeUnknown("lost") }
            if unsentTries == 2 { throw ClientError.unreachable(server: "s", reason: "connection refused") }
            return "done"
        }
        #expect(answer == "done")
        #expect(unsentTries == 3)
        // Nor does a refused certificate, which no retry fixes: unknown at once.
        var refusedTries = 0
        await #expect(throws: MemoError.outcomeUnknown("lost")) {
            try await retry.run { _, _ -> String in
                refusedTries += 1
                if refusedTries == 1 { throw MemoError.outcomeUnknown("lost") }
                throw ClientError.tlsRefused(server: "s", TLSError(kind: .unknownCA, operation: "TLS handshake"))
            }
        }
        #expect(refusedTries == 2)
    }

    @Test func stillUnknownWhenTheDeadlineComesIsThrownAsUnknownWithTheFirstTrysReason() async {
        // The first try's 505 is why the outcome is unknown; the later tries, cut short by the time left, only
        // add that they settled nothing. Before, the last try's "no answer within 0.1 s" replaced the reason.
        let retry = WriteRetry(deadline: .now + .milliseconds(300))
        var tries = 0
        do {
            _ = try await retry.run { _, _ -> String in
                tries += 1
                throw MemoError.outcomeUnknown(tries == 1 ? "the server's 505" : "no answer within 0.1 s")
            }
            Issue.record("a write whose every try was unknown succeeded")
        } catch {
            #expect(tries >= 2)
            let later = tries - 1
            #expect(error as? MemoError == MemoError.outcomeUnknown(
                "the server's 505; \(later) more tr\(later == 1 ? "y" : "ies") before the timeout did not settle it"))
        }
    }
}
