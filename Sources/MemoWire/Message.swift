import Foundation
import MemoModel
/// The role a client's certificate gives it.
public enum Role: UInt8, Sendable, Hashable {
    case readWrite = 1
    case readOnly = 2
}

/// Every message of the protocol. PROTOCOL.md gives each one's bytes.
public enum Message: Sendable, Hashable {
    // Requests, client to server.
    case hello(minVersion: UInt16, maxVersion: UInt16, client: String)
    /// `insertMicros` and `updateMicros` restore an exported memo's dates; nil means now.
    case create(id: UUID?, insertMicros: Int64?, updateMicros: Int64? = nil, content: String)
    case get(id: UUID)
    case list
    /// Version 3 adds a flags byte after the content: bit 0 `merge` (on a revision conflict the server may merge
    /// against the version at `expectedRevision`); earlier versions never carry it.
    case update(id: UUID, expectedRevision: UInt64?, content: String, merge: Bool = false)
    case delete(id: UUID, expectedRevision: UInt64?)
    /// From a snapshot (nil) or every change after a revision.
    case subscribe(after: UInt64?)
    case unsubscribe(subscription: UInt32)
    case ping(nonce: UInt64)
    /// Asks how the server is doing (any role may).
    case status
    /// Version 2: at most `limit` memos (0: no limit) listed after `after` (from the newest when nil).
    case listPage(limit: UInt32, after: ListCursor?)
    /// Version 3: at most `limit` (1 or more) versions of a memo, newest first, older than revision `before`.
    case history(id: UUID, limit: UInt32, before: UInt64?)
    /// Version 3: at most `limit` (1 or more) deleted memos, newest delete first, deleted before revision `before`.
    case trash(limit: UInt32, before: UInt64?)
    /// Version 3: restores version `revision` of a live memo, or brings a deleted memo back (its last content, or
    /// version `revision`'s), guarded by `expectedRevision` (the live memo's, or the delete's). Answered `memo`.
    case restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?)

    // Responses, server to client, with the request's id.
    case welcome(version: UInt16, revision: UInt64, maxFrameSize: UInt32, role: Role, server: String)
    case memo(Memo)
    /// A chunk of the answer to `list`; the last chunk has `last` set.
    case memos(revision: UInt64, last: Bool, memos: [Memo])
    case ok
    case pong(nonce: UInt64)
    /// The answer to `status`.
    case statusReport(StatusReport)
    /// Version 2: a chunk of the answer to `listPage`; the last chunk has `last` set, and `more` when memos are
    /// listed after the page.
    case page(revision: UInt64, last: Bool, more: Bool, memos: [Memo])
    /// Version 3: the answer to `history`; `more` when older versions follow.
    case versions(id: UUID, more: Bool, versions: [MemoVersion])
    /// Version 3: the answer to `trash`; `more` when older deletes follow.
    case trashPage(more: Bool, entries: [TrashEntry])

    // Pushed on a subscription, with the subscribe request's id.
    case snapshot(revision: UInt64, last: Bool, memos: [Memo])
    case subscribed(head: UInt64)
    case change(Change)
    case historyGone(requested: UInt64, oldestAvailable: UInt64)

    // Either way: an error answers the request with its id (0: the connection), going-away precedes a close.
    case error(code: ErrorCode, message: String)
    case goingAway(code: ErrorCode, message: String)

    /// The type byte of each message.
    public enum Kind: UInt8, Sendable, CaseIterable {
        case hello = 0x01, create = 0x02, get = 0x03, list = 0x04, update = 0x05, delete = 0x06
        case subscribe = 0x07, unsubscribe = 0x08, ping = 0x09, status = 0x0A, listPage = 0x0B
        case history = 0x0C, trash = 0x0D, restore = 0x0E
        case welcome = 0x41, memo = 0x42, memos = 0x43, ok = 0x44, pong = 0x45, statusReport = 0x46, page = 0x47
        case versions = 0x48, trashPage = 0x49
        case snapshot = 0x61, subscribed = 0x62, change = 0x63, historyGone = 0x64
        case error = 0x7E, goingAway = 0x7F
    }

    public var kind: Kind {
        switch self {
        case .hello: return .hello
        case .create: return .create
        case .get: return .get
        case .list: return .list
        case .update: return .update
        case .delete: return .delete
        case .subscribe: return .subscribe
        case .unsubscribe: return .unsubscribe
        case .ping: return .ping
        case .status: return .status
        case .listPage: return .listPage
        case .history: return .history
        case .trash: return .trash
        case .restore: return .restore
        case .versions: return .versions
        case .trashPage: return .trashPage
        case .welcome: return .welcome
        case .memo: return .memo
        case .memos: return .memos
        case .ok: return .ok
        case .pong: return .pong
        case .statusReport: return .statusReport
        case .page: return .page
        case .snapshot: return .snapshot
        case .subscribed: return .subscribed
        case .change: return .change
        case .historyGone: return .historyGone
        case .error: return .error
        case .goingAway: return .goingAway
        }
    }

    /// The lowest protocol version in which this message exists: it is sent only on a connection that agreed at
    /// least that version, and a server takes it only then (else 102, as an older server would answer).
    public var minimumVersion: UInt16 { kind.minimumVersion }

    /// Bytes of a memo on the wire before its content.
    public static let memoFixedSize = 16 + 8 + 8 + 8 + 4

    /// Bytes of `memo` on the wire: the fixed fields and the content, and, when the frame carries authors (from
    /// `WireProtocol.authorsVersion`), the author's name and serial with their two lengths.
    public static func memoSize(_ memo: Memo, authors: Bool) -> Int {
        let size = memoFixedSize + memo.content.utf8.count
        return authors ? size + 8 + memo.author.name.utf8.count + memo.author.serial.utf8.count : size
    }
}

extension Message.Kind {
    /// The lowest protocol version in which messages of this type exist.
    public var minimumVersion: UInt16 {
        switch self {
        case .listPage, .page: return 2
        case .history, .trash, .restore, .versions, .trashPage: return 3
        default: return 1
        }
    }
}
