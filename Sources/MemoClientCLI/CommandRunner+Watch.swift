import Foundation
import MemoClient
import MemoModel
import Synchronization

// watch's connection reports, its end when the reader goes away, and `watch --since REVISION`.

extension CommandRunner {
    /// One line on stderr per transition, piped or not: `connection lost (reason); reconnecting` when a live
    /// connection is lost, `reconnected to HOST:PORT at revision N` when it is live again (N: the server's
    /// revision then). On a terminal, the first connection also says `watching HOST:PORT (Ctrl-C stops)`.
    /// - Returns: the subscription that reports; the lines stop when it is released.
    func reportConnection(_ client: MemoConnection) -> Subscription {
        let err = self.err
        let human = style.human
        let server = configuration.server
        // (ever live, lost since)
        let seen = Mutex((everLive: false, lost: false))
        return client.connectionState.subscribe { state in
            let line: String? = seen.withLock { seen in
                switch state {
                case .live:
                    if !seen.everLive {
                        seen.everLive = true
                        return human ? "watching \(server) (Ctrl-C stops)" : nil
                    }
                    guard seen.lost else { return nil }
                    seen.lost = false
                    let revision = client.serverRevision.map(String.init) ?? "unknown"
                    return "reconnected to \(server) at revision \(revision)"
                case .offline, .connecting:
                    // Offline is also what closing the client at the end of the command reports: not a loss.
                    return nil
                case .reconnecting:
                    guard seen.everLive, !seen.lost else { return nil }
                    seen.lost = true
                    let reason = client.connectionFailure.value??.description ?? "the connection ended"
                    return "connection lost (\(reason)); reconnecting"
                }
            }
            guard let line else { return }
            err.line("memo-client: " + line)
            err.flush()
        }
    }

    /// Waits while watch prints: until the certificate is refused (thrown: exit 5 as for any command), `stops`
    /// yields an error (thrown), or standard output's reader goes away (its broken-pipe handler runs: memo-client
    /// exits 0 at once, even when no change comes to be written).
    func untilStopped(_ client: MemoConnection, stops: AsyncStream<any Error>? = nil) async throws {
        out.endWhenReaderGoes()
        // A lost connection is made again, but a refused certificate (revoked, expired, another CA) would be
        // refused on every retry: like any other command, watch then stops with exit 5 and the reason.
        let refusals = client.connectionFailure.values.compactMap { failure -> (any Error)? in
            guard let failure, ExitCode(failure) == .refused else { return nil }
            return failure
        }
        let (ends, end) = AsyncStream.makeStream(of: (any Error).self)
        let watchers = [
            Task {
                for await refusal in refusals {
                    end.yield(refusal)
                    return
                }
            },
            Task {
                guard let stops else { return }
                for await stop in stops {
                    end.yield(stop)
                    return
                }
            },
        ]
        defer { for watcher in watchers { watcher.cancel() } }
        for await error in ends { throw error }
    }

    /// `watch --since REVISION`: every change after `revision`, in order, each once, across reconnects; no list
    /// first. A revision the server no longer holds the changes after ends the command (exit 1) and says so.
    func watch(_ client: MemoConnection, after revision: UInt64) async throws {
        let formatter = self.formatter
        let out = self.out
        let last = Mutex(revision)
        let (stops, stop) = AsyncStream.makeStream(of: (any Error).self)
        let handle = client.subscribe(
            start: { last.withLock { $0 } },
            handler: { events in
                for event in events {
                    switch event {
                    case .change(let change):
                        let fresh = last.withLock { last -> Bool in
                            guard change.revision > last else { return false }
                            last = change.revision
                            return true
                        }
                        if fresh { out.line(formatter.line(change)) }
                    case .historyGone(let requested, _) where requested > client.serverRevision ?? .max:
                        stop.yield(InputError(
                            "revision \(requested) is ahead of the server, which is at revision "
                                + "\(client.serverRevision ?? 0)"))
                    case .historyGone(let requested, let oldest):
                        stop.yield(InputError(
                            "the server no longer holds the changes after revision \(requested) (the oldest it can "
                                + "resume from is \(oldest)); watch without --since starts from the list"))
                    case .failed(let code, let message):
                        stop.yield(ClientError.server(code: code, message: message))
                    case .snapshot, .subscribed:
                        break
                    }
                }
                out.flush()
            })
        defer { handle.cancel() }
        let reporting = reportConnection(client)
        defer { reporting.cancel() }
        try await untilStopped(client, stops: stops)
    }
}
