import Foundation

/// Who made a change: the client certificate's common name and serial (upper-case hex, as `CertificateSerial`
/// gives it), taken by the server from the TLS session, never from the client. Memos made before versions were
/// kept, and changes made without a certificate (a store used directly), have the empty author, shown as `-`.
///
/// One reference wide: every memo and version holds one, so a million memos cost 8 bytes each for it, not the
/// 32 of two strings, and memos by the same author can share one `Names` (`AuthorInterner` makes a load share
/// them). Equal and hashed by value, the strings compared as UTF-8 bytes: a name in NFC and the same name in NFD
/// are different authors, as they are different certificates.
public struct Author: Sendable, Hashable, CustomStringConvertible {
    /// The name and serial, made once. `Sendable` without `@unchecked`: a final class of `let` properties never
    /// changes after its init.
    final class Names: Sendable {
        let name: String
        let serial: String

        init(name: String, serial: String) {
            self.name = name
            self.serial = serial
        }
    }

    /// nil for the empty author.
    private let names: Names?

    public init(name: String, serial: String) {
        names = name.isEmpty && serial.isEmpty ? nil : Names(name: name, serial: serial)
    }

    /// No author known: name and serial empty.
    public static let none = Author(name: "", serial: "")

    public var name: String { names?.name ?? "" }
    public var serial: String { names?.serial ?? "" }

    public var isEmpty: Bool { names == nil }

    /// The name, or `-` for the empty author.
    public var description: String { names.map { $0.name.isEmpty ? "-" : $0.name } ?? "-" }

    /// Whether both hold the very same name and serial, not only equal ones: what an `AuthorInterner` gives the
    /// authors it shares (the empty author shares with itself).
    public func isShared(with other: Author) -> Bool { names === other.names }

    public static func == (a: Author, b: Author) -> Bool {
        if a.names === b.names { return true }
        guard let x = a.names, let y = b.names else { return false }
        return x.name.hasSameBytes(as: y.name) && x.serial.hasSameBytes(as: y.serial)
    }

    public func hash(into hasher: inout Hasher) {
        Self.withBytes(name) { name in Self.withBytes(serial) { Self.combine(name, $0, into: &hasher) } }
    }

    /// Whether the name and serial are these bytes.
    func matches(name: UnsafeRawBufferPointer, serial: UnsafeRawBufferPointer) -> Bool {
        guard let names else { return name.isEmpty && serial.isEmpty }
        return Self.withBytes(names.name) { Self.same($0, name) }
            && Self.withBytes(names.serial) { Self.same($0, serial) }
    }

    /// The hash of an author with these bytes, the same as `hash(into:)` feeds (0xFF, never in UTF-8, between).
    static func combine(_ name: UnsafeRawBufferPointer, _ serial: UnsafeRawBufferPointer, into hasher: inout Hasher) {
        hasher.combine(bytes: name)
        hasher.combine(0xFF as UInt8)
        hasher.combine(bytes: serial)
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    static func withBytes<Result>(_ text: String, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(text.utf8).withUnsafeBytes(body)
    }
}

/// What made a version of a memo.
public enum VersionKind: UInt8, Sendable, Hashable, CaseIterable {
    case create = 1
    case update = 2
    /// A restore: an old version's content made current again, or a deleted memo brought back from the trash.
    case restore = 3

    public var name: String {
        switch self {
        case .create: return "create"
        case .update: return "update"
        case .restore: return "restore"
        }
    }

    public init?(name: String) {
        guard let kind = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = kind
    }
}

/// One kept version of a memo: the content a change gave it, with who and when.
public struct MemoVersion: Sendable, Hashable {
    public var id: UUID
    /// The revision of the change that made this version.
    public var revision: UInt64
    public var kind: VersionKind
    /// When the change was made, microseconds since the Unix epoch (the memo's update date after it).
    public var micros: Int64
    public var author: Author
    public var content: String

    public init(id: UUID, revision: UInt64, kind: VersionKind, micros: Int64, author: Author, content: String) {
        self.id = id
        self.revision = revision
        self.kind = kind
        self.micros = micros
        self.author = author
        self.content = content
    }

    public var date: Date { Date(unixMicros: micros) }
}

/// A page of a memo's versions, newest first, and whether older ones follow.
public struct VersionPage: Sendable, Hashable {
    public var versions: [MemoVersion]
    public var more: Bool

    public init(versions: [MemoVersion], more: Bool) {
        self.versions = versions
        self.more = more
    }
}

/// A deleted memo in the trash: the memo as it was when deleted (its last content, its insert date, its author
/// and revision before the delete), and the delete itself (revision, date, author).
public struct TrashEntry: Sendable, Hashable {
    public var memo: Memo
    /// The revision of the delete.
    public var revision: UInt64
    /// When it was deleted, microseconds since the Unix epoch.
    public var deletedMicros: Int64
    /// Who deleted it.
    public var deletedBy: Author

    public init(memo: Memo, revision: UInt64, deletedMicros: Int64, deletedBy: Author) {
        self.memo = memo
        self.revision = revision
        self.deletedMicros = deletedMicros
        self.deletedBy = deletedBy
    }

    public var deletedDate: Date { Date(unixMicros: deletedMicros) }
}

/// A page of the trash, newest delete first, and whether older ones follow (the next page starts before the
/// last entry's delete revision).
public struct TrashPage: Sendable, Hashable {
    public var entries: [TrashEntry]
    public var more: Bool

    public init(entries: [TrashEntry], more: Bool) {
        self.entries = entries
        self.more = more
    }
}

/// How many versions each memo keeps and how long the trash keeps a deleted memo (`--versions`, `--trash-days`).
public struct VersionPolicy: Sendable, Hashable {
    /// Versions kept per memo, newest; 0 keeps none (and a restore finds nothing but the trash's last content).
    public var keep: Int
    /// Days a deleted memo stays in the trash; 0 purges it at the next pass.
    public var trashDays: Int

    public static let defaultKeep = 50
    public static let maxKeep = 10_000
    public static let defaultTrashDays = 30
    public static let maxTrashDays = 3650
    public static let standard = VersionPolicy(keep: defaultKeep, trashDays: defaultTrashDays)

    /// - Precondition: `keep` in 0...10000, `trashDays` in 0...3650 (the server's options check them first).
    public init(keep: Int = defaultKeep, trashDays: Int = defaultTrashDays) {
        precondition((0...Self.maxKeep).contains(keep), "versions kept must be 0...\(Self.maxKeep)")
        precondition((0...Self.maxTrashDays).contains(trashDays), "trash days must be 0...\(Self.maxTrashDays)")
        self.keep = keep
        self.trashDays = trashDays
    }

    /// Deletes older than this date (microseconds) are purged from the trash.
    public func purgeBefore(nowMicros: Int64) -> Int64 {
        nowMicros - Int64(trashDays) * 86_400_000_000
    }
}

/// What a store can say about kept versions and the trash: the reads behind `history` and `trash`.
///
/// Both calls complete once, on any thread (a durable store reads its database on a thread of its own, so that
/// the caller never waits on it).
public protocol VersionReading: Sendable {
    /// At most `limit` (1 or more) versions of memo `id`, newest first, older than revision `before` when given.
    /// - Fails with `notFound` when the store knows nothing of the id (not live, not in the trash, no version).
    func history(
        id: UUID, limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<VersionPage, MemoError>) -> Void)

    /// At most `limit` (1 or more) deleted memos, newest delete first, deleted before revision `before` when given.
    func trash(limit: Int, before: UInt64?, completion: @escaping @Sendable (Result<TrashPage, MemoError>) -> Void)
}

extension VersionReading {
    /// `history` waited for.
    public func history(id: UUID, limit: Int, before: UInt64? = nil) async throws -> VersionPage {
        try await withCheckedThrowingContinuation { continuation in
            history(id: id, limit: limit, before: before) { continuation.resume(with: $0.mapError { $0 as Error }) }
        }
    }

    /// `trash` waited for.
    public func trash(limit: Int, before: UInt64? = nil) async throws -> TrashPage {
        try await withCheckedThrowingContinuation { continuation in
            trash(limit: limit, before: before) { continuation.resume(with: $0.mapError { $0 as Error }) }
        }
    }
}

/// Where the write planner finds kept versions and trash entries, for a restore (and a merge's base): the store's
/// own reads, made while it plans. Called on the planning thread only, under the store's write order.
public struct VersionLookup {
    /// The kept version of memo `id` made by revision `revision`, if it is still kept.
    public var version: (_ id: UUID, _ revision: UInt64) -> MemoVersion?
    /// The trash's entry for memo `id`, if it is in the trash.
    public var trashed: (_ id: UUID) -> TrashEntry?

    public init(
        version: @escaping (UUID, UInt64) -> MemoVersion?, trashed: @escaping (UUID) -> TrashEntry?
    ) {
        self.version = version
        self.trashed = trashed
    }

    /// Nothing kept: a store without versions.
    public static var none: VersionLookup { VersionLookup(version: { _, _ in nil }, trashed: { _ in nil }) }
}
