import Foundation

/// What a storage operation can fail with. The wire protocol maps each case to a numbered error code.
public enum MemoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No memo has this id (or it was deleted).
    case notFound(UUID)
    /// A restore or a history found no such version of the memo (never kept, or purged), with the reason; answered
    /// as not-found.
    case versionNotFound(id: UUID, reason: String)
    /// The memo's revision is not the one the caller expected, or a create reused an id for other content.
    case conflict(id: UUID, expected: UInt64?, actual: UInt64)
    /// The content is larger than `MemoLimits.maxContentBytes`.
    case contentTooLarge(size: Int, limit: Int)
    /// The request itself is wrong (an argument out of range).
    case invalidArgument(String)
    /// The caller may not do this (a read-only client writing).
    case permissionDenied(String)
    /// The store could not do its work (I/O error, database error); nothing was changed.
    case storage(String)
    /// The store's disk is full; nothing was changed, reads still work.
    case storageFull(String)
    /// The store was closed.
    case closed
    /// The requested revision is older than the history holds (or newer than the store has).
    case historyGone(requested: UInt64, oldestAvailable: UInt64)
    /// A remote store could not reach its server or timed out.
    case unavailable(String)
    /// The write reached the store (or the server), and then the connection broke or timed out before its answer:
    /// it may or may not have been applied. Retrying is safe for a create with its id and for an update or delete
    /// with its expected revision.
    case outcomeUnknown(String)

    public var description: String {
        switch self {
        case .notFound(let id): return "memo \(id.lowercasedString) not found"
        case .versionNotFound(let id, let reason): return "memo \(id.lowercasedString): \(reason)"
        case .conflict(let id, let expected, let actual):
            if let expected {
                return "memo \(id.lowercasedString) is at revision \(actual), not the expected \(expected)"
            }
            return "memo \(id.lowercasedString) already exists with different content (revision \(actual))"
        case .contentTooLarge(let size, let limit): return "content is \(size) bytes, over the limit of \(limit)"
        case .invalidArgument(let message): return "invalid argument: \(message)"
        case .permissionDenied(let message): return "permission denied: \(message)"
        case .storage(let message): return "storage error: \(message)"
        case .storageFull(let message): return "storage full: \(message)"
        case .closed: return "the store is closed"
        case .historyGone(let requested, let oldest):
            return "changes after revision \(requested) are no longer held (oldest available: \(oldest))"
        case .unavailable(let message): return "unavailable: \(message)"
        case .outcomeUnknown(let message): return "outcome unknown: \(message)"
        }
    }
}
