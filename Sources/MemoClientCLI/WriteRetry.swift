import Foundation
import MemoClient
import MemoModel
/// Runs one write until its outcome is known or `--timeout` is spent: a try whose outcome is unknown (sent and
/// not answered, or answered 505 `outcome-unknown`) is made again, which is safe because every try is the same
/// request by id (a create with its client-chosen id, an update with its expected revision, a delete by id).
/// The caller's `attempt` turns what a retry meets into what it knows (a conflict whose memo holds our bytes is
/// our first try's success; a delete that finds nothing after an unknown try is done).
struct WriteRetry: Sendable {
    /// When the write's time is up (`--timeout` after the connection was made).
    let deadline: ContinuousClock.Instant
    /// The first pause after an unknown outcome, doubled up to `longestPause`.
    static let firstPause: Duration = .milliseconds(50)
    static let longestPause: Duration = .seconds(1)
    /// Less time than this left is not worth another try.
    static let leastTry: Duration = .milliseconds(100)

    /// Time left before the deadline (at least a millisecond, so a last try still gets a deadline of its own).
    var timeLeft: Duration { max(deadline - ContinuousClock.now, .milliseconds(1)) }

    /// - Parameter attempt: one try, told whether an earlier try's outcome is unknown and how long it may take.
    /// - Returns: the answer of the first try that settles the write.
    /// - Throws: the first definite failure; `MemoError.outcomeUnknown` when the time ran out with the outcome
    ///   still unknown (an earlier try may have been applied): the first unknown try's reason (the server's 505, or
    ///   no answer), not the last's, whose only news is that the time left was short, and how many tries followed.
    func run<Answer: Sendable>(
        _ attempt: (_ afterUnknown: Bool, _ timeout: Duration) async throws -> Answer
    ) async throws -> Answer {
        // The first try whose outcome became unknown: its reason is why the write's outcome is unknown.
        var unknown: MemoError?
        var laterTries = 0
        var pause = Self.firstPause
        while true {
            if unknown != nil { laterTries += 1 }
            let error: any Error
            do {
                return try await attempt(unknown != nil, timeLeft)
            } catch let caught {
                error = caught
            }
            if let error = error as? MemoError, case .outcomeUnknown = error {
                unknown = unknown ?? error
            } else if unknown == nil || Self.settles(error) {
                throw error
            } else if !Self.isPassing(error) {
                // Retrying cannot help (a refused certificate, say): what is known is still that it is unknown.
                throw unknown!
            }
            // A retry that was not answered, or met a passing trouble, leaves the outcome unknown: try again while
            // a try still fits before the deadline.
            guard deadline - ContinuousClock.now - pause >= Self.leastTry else {
                throw Self.stillUnknown(unknown!, laterTries: laterTries)
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, Self.longestPause)
        }
    }

    /// The first unknown try's error, saying how many tries after it settled nothing.
    static func stillUnknown(_ first: MemoError, laterTries: Int) -> MemoError {
        guard case .outcomeUnknown(let reason) = first, laterTries > 0 else { return first }
        return .outcomeUnknown(
            reason + "; \(laterTries) more tr\(laterTries == 1 ? "y" : "ies") before the timeout did not settle it")
    }

    /// An answer that settles a retried write whatever the first try did: the memo is gone or elsewhere
    /// (not-found, conflict), or the request itself is refused (it would have been the first time too).
    static func settles(_ error: any Error) -> Bool {
        guard let error = error as? MemoError else { return false }
        switch error {
        case .notFound, .conflict, .contentTooLarge, .invalidArgument, .permissionDenied: return true
        default: return false
        }
    }

    /// Trouble that another try may not meet: no connection, no answer, the store unavailable.
    static func isPassing(_ error: any Error) -> Bool {
        switch error {
        case let error as MemoError:
            switch error {
            case .storage, .unavailable, .outcomeUnknown: return true
            default: return false
            }
        case let error as ClientError:
            return ExitCode(error) == .unreachable
        default:
            return false
        }
    }
}
