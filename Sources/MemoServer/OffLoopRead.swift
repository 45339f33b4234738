import MemoModel
import MemoNet
import MemoWire

/// A request a connection answers from a read made off its loop: the server's status gathered from every loop, or
/// kept versions or the trash read by the store on its own thread. The answer comes back on any thread; the
/// connection hops to its loop, where the session counts it (`ServerSession.offLoopAnswered`) and it is queued.
enum OffLoopRead {
    case status
    case versions(VersionRead)

    /// Starts the read; `completion` runs once, on any thread, with the message that answers it or the store's
    /// error.
    func start(on server: ServerShared, completion: @escaping @Sendable (Result<Message, MemoError>) -> Void) {
        switch self {
        case .status:
            server.gatherStatus { completion(.success(.statusReport($0))) }
        case .versions(.history(let id, let limit, let before)):
            let maxFrameSize = server.limits.maxFrameSize
            server.store.history(id: id, limit: limit, before: before) { result in
                completion(result.map {
                    Self.fitted(.versions(id: id, more: $0.more, versions: $0.versions), maxFrameSize: maxFrameSize)
                })
            }
        case .versions(.trash(let limit, let before)):
            let maxFrameSize = server.limits.maxFrameSize
            server.store.trash(limit: limit, before: before) { result in
                completion(result.map {
                    Self.fitted(.trashPage(more: $0.more, entries: $0.entries), maxFrameSize: maxFrameSize)
                })
            }
        }
    }

    /// Starts the read for `connection` (off its loop), then answers it on the connection's loop, unless the
    /// connection closed meanwhile.
    func start(for connection: ServerConnection, requestID: UInt32) {
        let bound = LoopBound(connection, eventLoop: connection.loop)
        start(on: connection.server) { result in
            bound.eventLoop.execute {
                let connection = bound.value
                guard connection.phase != .closed,
                    let message = connection.session?.offLoopAnswered(
                        self, result, counters: &connection.context.value.counters)
                else { return }
                connection.enqueue { $0.append(message, requestID: requestID) }
                connection.flush()
            }
        }
    }

    /// A `versions` or `trash-page` answer cut to fit one frame: the oldest entries go (and `more` says they follow).
    static func fitted(_ message: Message, maxFrameSize: Int) -> Message {
        var message = message
        while message.frame(requestID: 0, version: WireProtocol.authorsVersion).count > maxFrameSize {
            switch message {
            case .versions(let id, _, let versions) where versions.count > 1:
                message = .versions(id: id, more: true, versions: Array(versions.dropLast(max(1, versions.count / 4))))
            case .trashPage(_, let entries) where entries.count > 1:
                message = .trashPage(more: true, entries: Array(entries.dropLast(max(1, entries.count / 4))))
            default:
                return message
            }
        }
        return message
    }
}

extension ServerSession {
    /// An off-loop read came back: counted as its request's answer (no longer in flight), and the message that
    /// answers it.
    mutating func offLoopAnswered(
        _ read: OffLoopRead, _ result: Result<Message, MemoError>, counters: inout LoopCounters
    ) -> Message {
        switch (read, result) {
        case (.status, .success(let message)):
            statusAnswered(counters: &counters)
            return message
        case (.status, .failure(let error)):
            statusAnswered(counters: &counters)
            return .error(code: ErrorCode(error), message: error.description)
        case (.versions, _):
            return versionsRead(result, counters: &counters)
        }
    }
}
