import Foundation
import MemoClient
import MemoModel
import MemoWire

// `log` and `trash`: pages of the server's `history` and `trash` answers, followed by their cursor (the revision
// of the last entry received) until the command has what it asked for.

extension CommandRunner {
    /// Up to `limit` entries (nil: every one), newest first, older than revision `before` when given. A request
    /// asks for what is still wanted (at most `WireProtocol.maxVersionsPage`, the server's own cap); the server's
    /// flag says whether older entries follow (it also cuts an answer that would not fit in a frame), and the next
    /// request starts before the last entry received.
    static func pages<Entry>(
        limit: Int?, before: UInt64?, revision: (Entry) -> UInt64,
        page: (_ limit: UInt32, _ before: UInt64?) async throws -> (entries: [Entry], more: Bool)
    ) async throws -> [Entry] {
        let pageLimit = Int(WireProtocol.maxVersionsPage)
        var entries: [Entry] = []
        var cursor = before
        while true {
            let wanted = limit.map { $0 - entries.count } ?? pageLimit
            guard wanted > 0 else { break }
            let answer = try await page(UInt32(min(wanted, pageLimit)), cursor)
            entries += answer.entries
            // Older entries follow only from an answer that moved the cursor back (else this would ask forever).
            guard answer.more, let last = answer.entries.last, cursor.map({ revision(last) < $0 }) ?? true else {
                break
            }
            cursor = revision(last)
        }
        return entries
    }

    /// Up to `limit` versions of memo `id` (nil: all it keeps), newest first, older than `before` when given.
    static func versions(
        of id: UUID, limit: Int?, before: UInt64? = nil, _ client: MemoConnection
    ) async throws -> [MemoVersion] {
        try await pages(limit: limit, before: before, revision: \.revision) { limit, before in
            let page = try await client.history(id: id, limit: limit, before: before)
            return (page.versions, page.more)
        }
    }

    /// `log ID`: the versions, newest first; with `patch`, one more is read so that the oldest shown has the one
    /// before it.
    func log(_ idText: String, limit: Int?, before: UInt64?, patch: Bool, _ client: MemoConnection) async throws {
        let id = try await resolveKnown(idText, client)
        let versions = try await Self.versions(
            of: id, limit: limit.map { patch ? $0 + 1 : $0 }, before: before, client)
        let shown = limit.map { Array(versions.prefix($0)) } ?? versions
        let patches = patch ? VersionPatch.patches(versions, shown: shown.count) : nil
        if style.json {
            let objects = shown.indices.map { index in
                patches.map { MemoJSON.object(shown[index], patch: $0[index]) } ?? MemoJSON.object(shown[index])
            }
            out.line("[" + objects.joined(separator: ",") + "]")
        } else {
            for (index, version) in shown.enumerated() {
                out.line(formatter.line(version))
                if let patches {
                    out.write(patches[index])
                    out.line("")
                }
            }
        }
    }

    /// `trash`: the deleted memos, newest delete first.
    func trash(limit: Int?, before: UInt64?, _ client: MemoConnection) async throws {
        let entries = try await Self.pages(limit: limit, before: before, revision: \TrashEntry.revision) {
            limit, before in
            let page = try await client.trash(limit: limit, before: before)
            return (page.entries, page.more)
        }
        if style.json {
            out.line("[" + entries.map(MemoJSON.object).joined(separator: ",") + "]")
        } else {
            for entry in entries { out.line(formatter.line(entry)) }
        }
    }
}
