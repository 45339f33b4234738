import Foundation

/// A memo: its content and insert date, plus what a shared store needs to order and guard edits (id, revision,
/// update date).
public struct Memo: Sendable, Hashable, Identifiable {
    /// Chosen by whoever creates it, so that a retried create can be recognised.
    public var id: UUID
    /// Valid UTF-8 (Swift strings always are once decoded), at most `MemoLimits.maxContentBytes` bytes.
    public var content: String
    /// Microseconds since the Unix epoch; set once when the memo is created.
    public var insertMicros: Int64
    /// Microseconds since the Unix epoch of the last change.
    public var updateMicros: Int64
    /// The global revision of this memo's last change.
    public var revision: UInt64
    /// Who made the memo's last change (`Author.none` when not known: made before versions were kept).
    public var author: Author

    public init(
        id: UUID, content: String, insertMicros: Int64, updateMicros: Int64, revision: UInt64, author: Author = .none
    ) {
        self.id = id
        self.content = content
        self.insertMicros = insertMicros
        self.updateMicros = updateMicros
        self.revision = revision
        self.author = author
    }

    public var insertDate: Date { Date(unixMicros: insertMicros) }
    public var updateDate: Date { Date(unixMicros: updateMicros) }
}

extension Date {
    /// A date from microseconds since the Unix epoch, the unit of every timestamp in this project.
    public init(unixMicros: Int64) {
        self.init(timeIntervalSince1970: Double(unixMicros) / 1_000_000)
    }

    /// Microseconds since the Unix epoch, rounded to the nearest microsecond.
    public var unixMicros: Int64 {
        Int64((timeIntervalSince1970 * 1_000_000).rounded())
    }
}

/// Named limits shared by the stores, the codec and the server.
public enum MemoLimits {
    /// The largest memo content, in UTF-8 bytes.
    public static let maxContentBytes = 64 * 1024
    /// How many changes a store keeps for subscribers that resume from a revision.
    public static let defaultHistoryCapacity = 100_000

    /// Checks content against the limits.
    /// - Throws: `MemoError.contentTooLarge` when it is over `maxContentBytes`.
    public static func validate(content: String) throws(MemoError) {
        let size = content.utf8.count
        if size > maxContentBytes { throw .contentTooLarge(size: size, limit: maxContentBytes) }
    }
}
