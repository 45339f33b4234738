import Foundation
import MemoClient
import MemoCore
import MemoTLS
import Testing

@testable import MemoClientCLI

@Suite("memo-client: retrying a write whose outcome is unknown")
struct WriteRetryTests {
    private let id = UUID()

    @Test func anUnknownTryIsMadeAgainAndTheRetrysAnswerIsTheResult() async throws {
        let retry = WriteRetry(deadline: .now + .seconds(30))
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
        let retry = WriteRetry(deadline: .now + .seconds(30))
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
        let retry = WriteRetry(deadline: .now + .seconds(30))
        var tries = 0
        await #expect(throws: MemoError.conflict(id: id, expected: 3, actual: 4)) {
            try await retry.run { _, _ -> String in
                tries += 1
                if tries == 1 { throw MemoError.outcomeUnknown("lost") }
                throw MemoError.conflict(id: id, expected: 3, actual: 4)
            }
        }
        // A retry that could not be sent (no connection) says nothing of the first try: still unknown at the end.
        let short = WriteRetry(deadline: .now + .milliseconds(400))
        var shortTries = 0
        await #expect(throws: MemoError.outcomeUnknown("lost")) {
            try await short.run { _, _ -> String in
                shortTries += 1
                if shortTries == 1 { throw MemoError.outcomeUnknown("lost") }
                throw ClientError.unreachable(server: "s", reason: "connection refused")
            }
        }
        #expect(shortTries >= 2)
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
}
