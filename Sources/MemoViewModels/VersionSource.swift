import Foundation
import MemoModel

/// Where the history and trash scenes read a memo's kept versions and the deleted memos, and restore them: the
/// remote client's connection in the front end (the server keeps versions), a serving store in tests. Every call
/// throws `MemoError`.
public protocol VersionSource: Sendable {
    /// At most `limit` versions of a memo, newest first, and whether older ones are kept too.
    /// - Throws: `MemoError.notFound` for an id the server does not know.
    func history(of id: UUID, limit: Int) async throws -> VersionPage

    /// At most `limit` deleted memos, the last deleted first, and whether more are in the trash.
    func trash(limit: Int) async throws -> TrashPage

    /// Makes a live memo's content that of its version `revision` (an update, guarded by `expectedRevision`), or
    /// brings a deleted memo back from the trash under its id (guarded by the delete's revision).
    /// - Throws: `conflict` when the memo moved on from `expectedRevision`; `versionNotFound` (with the reason)
    ///   when the version or the deleted memo is no longer kept.
    @discardableResult
    func restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?) async throws -> Memo
}

/// A serving store's own versions and trash (the memory, SQLite and PostgreSQL stores keep them): what a front end
/// over a local store, and the tests, read. Restores made here have no author (a store has no certificate).
public struct StoreVersions: VersionSource {
    private let store: any ServingStore

    public init(_ store: any ServingStore) { self.store = store }

    public func history(of id: UUID, limit: Int) async throws -> VersionPage {
        try await store.history(id: id, limit: limit, before: nil)
    }

    public func trash(limit: Int) async throws -> TrashPage {
        try await store.trash(limit: limit, before: nil)
    }

    public func restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?) async throws -> Memo {
        try await store.restore(id: id, revision: revision, expectedRevision: expectedRevision, author: .none)
    }
}
