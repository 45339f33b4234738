/// Shares one `Author` among the rows or memos that name the same author: a load of a million memos by ten
/// authors holds ten authors' names, not a million copies of them (a certificate's serial, 32 to 40 hex
/// characters, is a heap string of its own each time it is made).
///
/// Kept for one load (a store's start, a mirror cache's read) or one connection (the client's decoder); at most
/// `capacity` distinct authors are kept, past them an author is made afresh as it would be without sharing.
public struct AuthorInterner {
    /// Distinct authors kept at most: the table stays small even when every memo has an author of its own.
    public static let capacity = 1024

    /// The author returned last: a load's rows come in runs by one author often enough to try it first.
    private var last = Author.none
    /// The authors kept, by the hash of their bytes (a second author with the same hash is not kept).
    private var kept: [Int: Author] = [:]

    public init() {}

    /// How many distinct authors are kept.
    public var count: Int { kept.count }

    /// The author whose name and serial are these UTF-8 bytes, shared with every earlier one of the same bytes;
    /// nil when the bytes are not valid UTF-8 (nothing is kept for them).
    public mutating func author(name: UnsafeRawBufferPointer, serial: UnsafeRawBufferPointer) -> Author? {
        if name.isEmpty && serial.isEmpty { return Author.none }
        if last.matches(name: name, serial: serial) { return last }
        var hasher = Hasher()
        Author.combine(name, serial, into: &hasher)
        let key = hasher.finalize()
        if let known = kept[key], known.matches(name: name, serial: serial) {
            last = known
            return known
        }
        let made = Author(
            name: String(decoding: name, as: UTF8.self), serial: String(decoding: serial, as: UTF8.self))
        // Decoding repairs what is not UTF-8 (U+FFFD): such an author does not have the bytes it was read from.
        guard made.matches(name: name, serial: serial) else { return nil }
        keep(made, as: key)
        return made
    }

    /// The same for a store's rows, read as `String(decoding:as:)` reads text: bytes that are not UTF-8 are
    /// repaired (U+FFFD), and such an author is not shared.
    public mutating func decoding(name: UnsafeRawBufferPointer, serial: UnsafeRawBufferPointer) -> Author {
        author(name: name, serial: serial)
            ?? Author(name: String(decoding: name, as: UTF8.self), serial: String(decoding: serial, as: UTF8.self))
    }

    private mutating func keep(_ author: Author, as key: Int) {
        last = author
        if kept.count < Self.capacity, kept[key] == nil { kept[key] = author }
    }
}
