import Foundation
import MemoClient
import MemoModel
import MemoViewModels

/// The server's kept versions and trash, through the client's connection, in the front end's terms. Each call is
/// one request (protocol version 3); a restore is a write whose author is this client's certificate.
struct RemoteVersions: VersionSource {
    let client: MemoConnection

    func history(of id: UUID, limit: Int) async throws -> VersionPage {
        try await client.history(id: id, limit: UInt32(clamping: limit))
    }

    func trash(limit: Int) async throws -> TrashPage {
        try await client.trash(limit: UInt32(clamping: limit))
    }

    func restore(id: UUID, revision: UInt64?, expectedRevision: UInt64?) async throws -> Memo {
        try await client.restore(id: id, revision: revision, expectedRevision: expectedRevision)
    }
}
