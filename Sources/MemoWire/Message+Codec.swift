import Foundation
import MemoModel
extension Message {
    /// The whole frame for this message, as protocol `version` writes it (before version 3, as versions 1 and 2
    /// do: memos without authors, `update` without its flags byte).
    public func frame(requestID: UInt32, version: UInt16 = 2) -> [UInt8] {
        var writer = WireWriter(capacity: frameCapacity)
        encode(into: &writer, requestID: requestID, version: version)
        return writer.bytes
    }

    /// Appends the whole frame for this message, as protocol `version` writes it.
    public func encode(into writer: inout WireWriter, requestID: UInt32, version: UInt16 = 2) {
        let authors = writer.authors
        writer.authors = version >= WireProtocol.authorsVersion
        defer { writer.authors = authors }
        switch self {
        case .memo(let memo):
            writer.memoFrame(memo, type: kind.rawValue, requestID: requestID)
            return
        case .create(let id, let insertMicros, let updateMicros, let content):
            writer.createFrame(
                id: id, insertMicros: insertMicros, updateMicros: updateMicros, content: content, type: kind.rawValue,
                requestID: requestID)
            return
        default:
            break
        }
        let start = writer.bytes.count
        writer.u32(0)  // patched below
        writer.u8(kind.rawValue)
        writer.u32(requestID)
        encodePayload(into: &writer)
        writer.patchU32(UInt32(writer.bytes.count - start - 4), at: start)
    }

    /// Enough bytes for the whole frame of the common messages, so that encoding one allocates once instead of
    /// growing its array when a memo's content is over a few dozen bytes (one allocation per answer saved).
    private var frameCapacity: Int {
        let fixed = 64
        switch self {
        case .memo(let memo): return fixed + memo.content.utf8.count
        case .change(let change): return fixed + change.memo.content.utf8.count
        case .create(_, _, _, let content), .update(_, _, let content, _): return fixed + content.utf8.count
        case .error(_, let message), .goingAway(_, let message): return fixed + message.utf8.count
        default: return fixed
        }
    }

    private func encodePayload(into w: inout WireWriter) {
        switch self {
        case .hello(let minVersion, let maxVersion, let client):
            w.u16(minVersion)
            w.u16(maxVersion)
            w.string(client)
        case .create, .memo:
            preconditionFailure("encode(into:requestID:) writes these frames whole (createFrame, memoFrame)")
        case .get(let id):
            w.uuid(id)
        case .list, .ok, .status:
            break
        case .statusReport(let report):
            report.encode(into: &w)
        case .listPage(let limit, let after):
            w.u32(limit)
            if let after {
                w.u8(1)
                w.i64(after.insertMicros)
                w.uuid(after.id)
            } else {
                w.u8(0)
            }
        case .page(let revision, let last, let more, let memos):
            w.u64(revision)
            w.u8((last ? 1 : 0) | (more ? 2 : 0))
            w.u32(UInt32(memos.count))
            for memo in memos { w.memo(memo) }
        case .update(let id, let expected, let content, let merge):
            w.uuid(id)
            Self.encodeExpected(expected, into: &w)
            w.string(content)
            if w.authors { w.u8(merge ? 1 : 0) }
        case .history(let id, let limit, let before):
            w.uuid(id)
            w.u32(limit)
            Self.encodeExpected(before, into: &w)
        case .trash(let limit, let before):
            w.u32(limit)
            Self.encodeExpected(before, into: &w)
        case .restore(let id, let revision, let expected):
            w.uuid(id)
            Self.encodeExpected(revision, into: &w)
            Self.encodeExpected(expected, into: &w)
        case .versions(let id, let more, let versions):
            w.uuid(id)
            w.u8(more ? 1 : 0)
            w.u32(UInt32(versions.count))
            for version in versions {
                w.u64(version.revision)
                w.u8(version.kind.rawValue)
                w.i64(version.micros)
                w.author(version.author)
                w.string(version.content)
            }
        case .trashPage(let more, let entries):
            w.u8(more ? 1 : 0)
            w.u32(UInt32(entries.count))
            for entry in entries {
                w.u64(entry.revision)
                w.i64(entry.deletedMicros)
                w.author(entry.deletedBy)
                w.uuid(entry.memo.id)
                w.i64(entry.memo.insertMicros)
                w.string(entry.memo.content)
            }
        case .delete(let id, let expected):
            w.uuid(id)
            Self.encodeExpected(expected, into: &w)
        case .subscribe(let after):
            if let after {
                w.u8(1)
                w.u64(after)
            } else {
                w.u8(0)
            }
        case .unsubscribe(let subscription):
            w.u32(subscription)
        case .ping(let nonce), .pong(let nonce):
            w.u64(nonce)
        case .welcome(let version, let revision, let maxFrameSize, let role, let server):
            w.u16(version)
            w.u64(revision)
            w.u32(maxFrameSize)
            w.u8(role.rawValue)
            w.string(server)
        case .memos(let revision, let last, let memos), .snapshot(let revision, let last, let memos):
            w.u64(revision)
            w.u8(last ? 1 : 0)
            w.u32(UInt32(memos.count))
            for memo in memos { w.memo(memo) }
        case .subscribed(let head):
            w.u64(head)
        case .change(let change):
            w.u64(change.revision)
            w.u8(change.kind.rawValue)
            w.memo(change.memo)
        case .historyGone(let requested, let oldest):
            w.u64(requested)
            w.u64(oldest)
        case .error(let code, let message), .goingAway(let code, let message):
            w.u16(code.rawValue)
            w.string(message)
        }
    }

    private static func encodeExpected(_ expected: UInt64?, into w: inout WireWriter) {
        if let expected {
            w.u8(1)
            w.u64(expected)
        } else {
            w.u8(0)
        }
    }

    /// Decodes a frame's message.
    /// - Throws: `WireError` for an unknown type, a field past the end, invalid UTF-8, an undefined value, a count
    ///   that cannot fit, or bytes left over.
    /// - Parameter version: the protocol version the connection agreed (before 3: memos without authors).
    public init(frame: Frame, version: UInt16 = 2) throws(WireError) {
        var reader = WireReader(frame.payload)
        try self.init(type: frame.type, payload: &reader, version: version)
    }

    /// The same, the memos' authors shared with those of earlier frames through `authors` (one a connection:
    /// a million memos mirrored by a few certificates hold a few authors).
    public init(frame: Frame, version: UInt16, authors: inout AuthorInterner) throws(WireError) {
        var reader = WireReader(frame.payload)
        // Moved, not copied, so that the reader adds to the only copy of the table.
        reader.sharedAuthors = authors
        authors = AuthorInterner()
        defer { authors = reader.sharedAuthors ?? AuthorInterner() }
        try self.init(type: frame.type, payload: &reader, version: version)
    }

    /// Decodes the message of type `type` from `r`, which holds its payload and nothing else (a frame the
    /// decoder has not copied out: `FrameDecoder.nextPayload`), as protocol `version` writes it.
    public init(type: UInt8, payload r: inout WireReader, version: UInt16 = 2) throws(WireError) {
        guard let kind = Kind(rawValue: type) else { throw .unknownMessageType(type) }
        r.authors = version >= WireProtocol.authorsVersion
        switch kind {
        case .hello:
            self = .hello(minVersion: try r.u16("min version"), maxVersion: try r.u16("max version"),
                          client: try r.string("client name"))
        case .create:
            let flags = try r.u8("create flags")
            guard flags & ~7 == 0 else { throw .invalidValue(field: "create flags", value: UInt64(flags)) }
            let id = flags & 1 != 0 ? try r.uuid("memo id") : nil
            let insert = flags & 2 != 0 ? try r.i64("insert date") : nil
            let update = flags & 4 != 0 ? try r.i64("update date") : nil
            self = .create(id: id, insertMicros: insert, updateMicros: update, content: try r.string("content"))
        case .get:
            self = .get(id: try r.uuid("memo id"))
        case .list:
            self = .list
        case .status:
            self = .status
        case .statusReport:
            self = .statusReport(try StatusReport(from: &r))
        case .listPage:
            let limit = try r.u32("limit")
            let flags = try r.u8("list-page flags")
            guard flags & ~1 == 0 else { throw .invalidValue(field: "list-page flags", value: UInt64(flags)) }
            var after: ListCursor?
            if flags == 1 {
                after = ListCursor(insertMicros: try r.i64("cursor insert date"), id: try r.uuid("cursor id"))
            }
            self = .listPage(limit: limit, after: after)
        case .page:
            let revision = try r.u64("revision")
            let flags = try r.u8("page flags")
            // "More" is said once, on the last chunk.
            guard flags & ~3 == 0, flags != 2 else {
                throw .invalidValue(field: "page flags", value: UInt64(flags))
            }
            let count = try r.count("memo count", minimumSize: Self.memoFixedSize)
            var memos: [Memo] = []
            memos.reserveCapacity(count)
            if r.authors && r.sharedAuthors == nil { r.sharedAuthors = AuthorInterner() }
            for _ in 0..<count { memos.append(try r.memo()) }
            self = .page(revision: revision, last: flags & 1 != 0, more: flags & 2 != 0, memos: memos)
        case .update:
            let id = try r.uuid("memo id")
            let expected = try Self.decodeExpected(&r)
            let content = try r.string("content")
            var merge = false
            if r.authors {
                let flags = try r.u8("update flags")
                guard flags & ~1 == 0 else { throw .invalidValue(field: "update flags", value: UInt64(flags)) }
                merge = flags == 1
            }
            self = .update(id: id, expectedRevision: expected, content: content, merge: merge)
        case .history:
            let id = try r.uuid("memo id")
            let limit = try r.u32("limit")
            self = .history(id: id, limit: limit, before: try Self.decodeExpected(&r, "before"))
        case .trash:
            let limit = try r.u32("limit")
            self = .trash(limit: limit, before: try Self.decodeExpected(&r, "before"))
        case .restore:
            let id = try r.uuid("memo id")
            let revision = try Self.decodeExpected(&r, "revision")
            self = .restore(id: id, revision: revision, expectedRevision: try Self.decodeExpected(&r))
        case .versions:
            let id = try r.uuid("memo id")
            let flags = try r.u8("versions flags")
            guard flags & ~1 == 0 else { throw .invalidValue(field: "versions flags", value: UInt64(flags)) }
            let count = try r.count("version count", minimumSize: 8 + 1 + 8 + 12)
            var versions: [MemoVersion] = []
            versions.reserveCapacity(count)
            for _ in 0..<count {
                let revision = try r.u64("version revision")
                let rawKind = try r.u8("version kind")
                guard let versionKind = VersionKind(rawValue: rawKind) else {
                    throw .invalidValue(field: "version kind", value: UInt64(rawKind))
                }
                let micros = try r.i64("version date")
                let author = try r.author("version author")
                versions.append(MemoVersion(
                    id: id, revision: revision, kind: versionKind, micros: micros, author: author,
                    content: try r.string("version content")))
            }
            self = .versions(id: id, more: flags == 1, versions: versions)
        case .trashPage:
            let flags = try r.u8("trash flags")
            guard flags & ~1 == 0 else { throw .invalidValue(field: "trash flags", value: UInt64(flags)) }
            let count = try r.count("trash count", minimumSize: 8 + 8 + 8 + 16 + 8 + 4)
            var entries: [TrashEntry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let revision = try r.u64("delete revision")
                let deleted = try r.i64("delete date")
                let author = try r.author("deleted by")
                let id = try r.uuid("memo id")
                let insert = try r.i64("memo insert date")
                let memo = Memo(
                    id: id, content: try r.string("memo content"), insertMicros: insert, updateMicros: deleted,
                    revision: revision, author: author)
                entries.append(TrashEntry(memo: memo, revision: revision, deletedMicros: deleted, deletedBy: author))
            }
            self = .trashPage(more: flags == 1, entries: entries)
        case .delete:
            let id = try r.uuid("memo id")
            self = .delete(id: id, expectedRevision: try Self.decodeExpected(&r))
        case .subscribe:
            let mode = try r.u8("subscribe mode")
            switch mode {
            case 0: self = .subscribe(after: nil)
            case 1: self = .subscribe(after: try r.u64("revision"))
            default: throw .invalidValue(field: "subscribe mode", value: UInt64(mode))
            }
        case .unsubscribe:
            self = .unsubscribe(subscription: try r.u32("subscription"))
        case .ping:
            self = .ping(nonce: try r.u64("nonce"))
        case .pong:
            self = .pong(nonce: try r.u64("nonce"))
        case .welcome:
            let version = try r.u16("version")
            let revision = try r.u64("revision")
            let maxFrame = try r.u32("max frame size")
            let rawRole = try r.u8("role")
            guard let role = Role(rawValue: rawRole) else {
                throw .invalidValue(field: "role", value: UInt64(rawRole))
            }
            self = .welcome(version: version, revision: revision, maxFrameSize: maxFrame, role: role,
                            server: try r.string("server name"))
        case .memo:
            self = .memo(try r.memo())
        case .ok:
            self = .ok
        case .memos, .snapshot:
            let revision = try r.u64("revision")
            let flags = try r.u8("chunk flags")
            guard flags & ~1 == 0 else { throw .invalidValue(field: "chunk flags", value: UInt64(flags)) }
            let count = try r.count("memo count", minimumSize: Self.memoFixedSize)
            var memos: [Memo] = []
            memos.reserveCapacity(count)
            if r.authors && r.sharedAuthors == nil { r.sharedAuthors = AuthorInterner() }
            for _ in 0..<count { memos.append(try r.memo()) }
            self = kind == .memos
                ? .memos(revision: revision, last: flags == 1, memos: memos)
                : .snapshot(revision: revision, last: flags == 1, memos: memos)
        case .subscribed:
            self = .subscribed(head: try r.u64("head"))
        case .change:
            let revision = try r.u64("revision")
            let rawKind = try r.u8("change kind")
            guard let changeKind = ChangeKind(rawValue: rawKind) else {
                throw .invalidValue(field: "change kind", value: UInt64(rawKind))
            }
            self = .change(Change(revision: revision, kind: changeKind, memo: try r.memo()))
        case .historyGone:
            self = .historyGone(requested: try r.u64("requested"), oldestAvailable: try r.u64("oldest available"))
        case .error:
            self = .error(code: ErrorCode(rawValue: try r.u16("error code")), message: try r.string("message"))
        case .goingAway:
            self = .goingAway(code: ErrorCode(rawValue: try r.u16("error code")), message: try r.string("message"))
        }
        try r.finish()
    }

    /// An optional revision: a flag byte (0 absent, 1 present), then the revision when present.
    private static func decodeExpected(
        _ r: inout WireReader, _ field: String = "expected revision"
    ) throws(WireError) -> UInt64? {
        let flag = try r.u8(field == "expected revision" ? "expected-revision flag" : field + " flag")
        switch flag {
        case 0: return nil
        case 1: return try r.u64(field)
        default:
            throw .invalidValue(
                field: field == "expected revision" ? "expected-revision flag" : field + " flag", value: UInt64(flag))
        }
    }
}

extension Message {
    /// Splits memos into `snapshot` (or `memos`) messages whose frames each fit in `maxFrameSize`; always at least
    /// one message, the last one flagged.
    public static func chunks(
        of memos: [Memo], revision: UInt64, maxFrameSize: Int = WireProtocol.defaultMaxFrameSize, snapshot: Bool
    ) -> [Message] {
        let budget = maxFrameSize - WireProtocol.headerSize - 8 - 1 - 4
        var result: [Message] = []
        var chunk: [Memo] = []
        var size = 0
        func make(_ memos: [Memo], last: Bool) -> Message {
            snapshot ? .snapshot(revision: revision, last: last, memos: memos)
                : .memos(revision: revision, last: last, memos: memos)
        }
        for memo in memos {
            let memoSize = memoFixedSize + memo.content.utf8.count
            if size + memoSize > budget, !chunk.isEmpty {
                result.append(make(chunk, last: false))
                chunk.removeAll(keepingCapacity: true)
                size = 0
            }
            chunk.append(memo)
            size += memoSize
        }
        result.append(make(chunk, last: true))
        return result
    }
}
