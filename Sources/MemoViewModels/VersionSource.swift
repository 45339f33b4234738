import Foundation
import MemoModel

/// One kept version of a memo, as the history scene shows it.
public struct VersionEntry: Sendable, Hashable {
    /// What made the version.
    public enum Kind: String, Sendable, Hashable {
        case create, update, restore
    }

    /// The global revision of the change that made it.
    public var revision: UInt64
    public var kind: Kind
    public var date: Date
    /// The name of the certificate that made the change; empty for a change from before versions were kept.
    public var author: String
    public var content: String

    public init(revision: UInt64, kind: Kind, date: Date, author: String, content: String) {
        self.revision = revision
        self.kind = kind
        self.date = date
        self.author = author
        self.content = content
    }
}

/// One deleted memo in the trash, as the trash scene shows it.
public struct TrashItem: Sendable, Hashable, Identifiable {
    public var id: UUID
    /// The memo's last content.
    public var content: String
    /// The revision of the delete.
    public var deletedRevision: UInt64
    public var deletedDate: Date
    /// The certificate that deleted it (empty: unknown).
    public var deletedBy: String

    public init(id: UUID, content: String, deletedRevision: UInt64, deletedDate: Date, deletedBy: String) {
        self.id = id
        self.content = content
        self.deletedRevision = deletedRevision
        self.deletedDate = deletedDate
        self.deletedBy = deletedBy
    }
}

/// Where the history and trash scenes read a memo's versions and the deleted memos, and restore them: the remote
/// client's connection (the server keeps versions). Every call throws `MemoError`.
public protocol VersionSource: Sendable {
    /// At most `limit` versions of a memo, newest first, and whether older ones are kept too.
    /// - Throws: `MemoError.notFound` for an id the server does not know.
    func history(of id: UUID, limit: Int) async throws -> (versions: [VersionEntry], more: Bool)

    /// At most `limit` deleted memos, the last deleted first, and whether more are in the trash.
    func trash(limit: Int) async throws -> (items: [TrashItem], more: Bool)

    /// Makes a live memo's content that of its version `revision` (an update, guarded by `expectedRevision`), or,
    /// with `revision` nil, brings a deleted memo back from the trash under its id.
    /// - Throws: `conflict` when the memo moved on from `expectedRevision`; `notFound` when the version or the
    ///   memo is no longer kept (purged).
    @discardableResult
    func restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?) async throws -> Memo
}

/// A kept version's author as the scenes print it: the name, or `-` when unknown.
func authorShown(_ name: String) -> String { name.isEmpty ? "-" : name }
