import Foundation
import MemoModel
/// Appends big-endian fields to a byte array.
public struct WireWriter {
    public var bytes: [UInt8]
    /// Protocol version 3 and later: each memo is followed by its author (name and serial, as strings).
    public var authors = false

    public init(capacity: Int = 64) {
        bytes = []
        // Not for 0: a writer that takes over another array's storage (`OutboundQueue`'s tail, once per answer)
        // paid the call for nothing.
        if capacity > 0 { bytes.reserveCapacity(capacity) }
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }

    public mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

    public mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    /// A u32 byte count, then the UTF-8 bytes.
    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func memo(_ memo: Memo) {
        // The fixed fields and the content's length as one 44-byte header, then the content: two appends rather
        // than six (each `append(contentsOf:)` has a fixed cost however few its bytes).
        var content = memo.content
        content.withUTF8 { utf8 in
            withUnsafeBytes(of: MemoHeader(memo, contentLength: utf8.count)) { raw in
                bytes.append(contentsOf: raw[..<MemoHeader.size])
            }
            bytes.append(contentsOf: utf8)
        }
        if authors { author(memo.author) }
    }

    /// An author: its name and serial, as strings (version 3).
    public mutating func author(_ author: Author) {
        string(author.name)
        string(author.serial)
    }

    /// The whole frame of a message whose payload is one memo (`memo`: the answer to every write and get): the
    /// frame header and the memo's fixed fields as one 53-byte append, then the content, instead of five appends
    /// and a patched length (BENCHMARKS.md, "Instruction counts behind the code's shape").
    public mutating func memoFrame(_ memo: Memo, type: UInt8, requestID: UInt32) {
        let headerSize = WireProtocol.headerSize + MemoHeader.size
        let trailer = authors ? 8 + memo.author.name.utf8.count + memo.author.serial.utf8.count : 0
        let append = { (bytes: inout [UInt8], utf8: UnsafeBufferPointer<UInt8>) in
            // The header as typed bytes: `append(contentsOf:)` of a raw buffer went through a slower generic path.
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: headerSize) { header in
                let raw = UnsafeMutableRawBufferPointer(header)
                Self.storeFrameHeader(
                    in: raw, length: headerSize - 4 + utf8.count + trailer, type: type, requestID: requestID)
                withUnsafeBytes(of: MemoHeader(memo, contentLength: utf8.count)) { fields in
                    raw.baseAddress!.advanced(by: WireProtocol.headerSize)
                        .copyMemory(from: fields.baseAddress!, byteCount: MemoHeader.size)
                }
                bytes.append(contentsOf: UnsafeBufferPointer(header))
            }
            bytes.append(contentsOf: utf8)
        }
        // The content read in place (a native string's, or a small one's copied to the stack by the standard
        // library), without the copy of the string `withUTF8` needs (a retain and a release per answer).
        if memo.content.utf8.withContiguousStorageIfAvailable({ append(&bytes, $0) }) == nil {
            var content = memo.content
            content.withUTF8 { append(&bytes, $0) }
        }
        if authors { author(memo.author) }
    }

    /// The whole frame of a `create` request (what every client write of a new memo sends): the frame header and
    /// the fields before the content as one append of at most 46 bytes, then the content, instead of an append
    /// per field (BENCHMARKS.md, "Instruction counts behind the code's shape").
    public mutating func createFrame(
        id: UUID?, insertMicros: Int64?, updateMicros: Int64?, content: String, type: UInt8, requestID: UInt32
    ) {
        let largest = WireProtocol.headerSize + 1 + 16 + 8 + 8 + 4
        var content = content
        content.withUTF8 { utf8 in
            withUnsafeTemporaryAllocation(byteCount: largest, alignment: 8) { raw in
                let flags = (id == nil ? 0 : 1) | (insertMicros == nil ? 0 : 2) | (updateMicros == nil ? 0 : 4)
                raw.storeBytes(of: UInt8(flags), toByteOffset: WireProtocol.headerSize, as: UInt8.self)
                var at = WireProtocol.headerSize + 1
                if let id {
                    raw.storeBytes(of: id.uuid, toByteOffset: at, as: uuid_t.self)
                    at += 16
                }
                if let insertMicros {
                    raw.storeBytes(of: UInt64(bitPattern: insertMicros).bigEndian, toByteOffset: at, as: UInt64.self)
                    at += 8
                }
                if let updateMicros {
                    raw.storeBytes(of: UInt64(bitPattern: updateMicros).bigEndian, toByteOffset: at, as: UInt64.self)
                    at += 8
                }
                raw.storeBytes(of: UInt32(utf8.count).bigEndian, toByteOffset: at, as: UInt32.self)
                at += 4
                Self.storeFrameHeader(in: raw, length: at - 4 + utf8.count, type: type, requestID: requestID)
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[..<at]))
            }
            bytes.append(contentsOf: utf8)
        }
    }

    /// Writes a frame's header at the start of `raw`: its length (everything after the length itself), its type
    /// and its request id.
    private static func storeFrameHeader(
        in raw: UnsafeMutableRawBufferPointer, length: Int, type: UInt8, requestID: UInt32
    ) {
        raw.storeBytes(of: UInt32(length).bigEndian, toByteOffset: 0, as: UInt32.self)
        raw.storeBytes(of: type, toByteOffset: 4, as: UInt8.self)
        raw.storeBytes(of: requestID.bigEndian, toByteOffset: WireProtocol.requestIDOffset, as: UInt32.self)
    }

    /// A memo's fields before its content, in wire order (no padding before `length`: 16 + 8 + 8 + 8 + 4 bytes).
    private struct MemoHeader {
        static let size = 44
        var id: uuid_t
        var revision: UInt64
        var insert: UInt64
        var update: UInt64
        var length: UInt32

        /// The header of `memo`, whose content is `contentLength` bytes of UTF-8, every field big-endian.
        init(_ memo: Memo, contentLength: Int) {
            assert(MemoryLayout<MemoHeader>.offset(of: \MemoHeader.length) == MemoHeader.size - 4)
            id = memo.id.uuid
            revision = memo.revision.bigEndian
            insert = UInt64(bitPattern: memo.insertMicros).bigEndian
            update = UInt64(bitPattern: memo.updateMicros).bigEndian
            length = UInt32(contentLength).bigEndian
        }
    }

    /// Writes `value` at `offset` (for a length known only at the end).
    public mutating func patchU32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.bigEndian) { raw in
            for i in 0..<4 { bytes[offset + i] = raw[i] }
        }
    }
}

/// Reads big-endian fields from a frame's payload; every read checks the bounds first and throws, never traps.
public struct WireReader {
    /// Protocol version 3 and later: each memo is followed by its author (see `WireWriter.authors`).
    public var authors = false
    /// When set, the authors read share one `Author` per distinct name and serial (a list's chunk, a mirror
    /// cache, or every frame of a connection: `Message.init(frame:version:authors:)`).
    public var sharedAuthors: AuthorInterner?
    private let bytes: [UInt8]
    private var index: Int
    private let end: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        index = 0
        end = bytes.count
    }

    /// Reads `bytes[range]` in place: a frame's payload straight from the decoder's buffer, with no copy of it.
    public init(_ bytes: [UInt8], range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "the range must lie in the bytes")
        self.bytes = bytes
        index = range.lowerBound
        end = range.upperBound
    }

    public var remaining: Int { end - index }

    private mutating func take(_ count: Int, _ field: String) throws(WireError) -> Int {
        guard count <= remaining else { throw .truncated(field: field) }
        defer { index += count }
        return index
    }

    public mutating func u8(_ field: String) throws(WireError) -> UInt8 {
        bytes[try take(1, field)]
    }

    public mutating func u16(_ field: String) throws(WireError) -> UInt16 {
        let at = try take(2, field)
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    public mutating func u32(_ field: String) throws(WireError) -> UInt32 {
        UInt32(bigEndian: load(at: try take(4, field)))
    }

    public mutating func u64(_ field: String) throws(WireError) -> UInt64 {
        UInt64(bigEndian: load(at: try take(8, field)))
    }

    /// The value whose bytes start at `offset` (already taken, so in bounds), loaded at once rather than byte by
    /// byte through bounds-checked subscripts.
    private func load<Value: BitwiseCopyable>(at offset: Int, as type: Value.Type = Value.self) -> Value {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Value.self) }
    }

    public mutating func i64(_ field: String) throws(WireError) -> Int64 {
        Int64(bitPattern: try u64(field))
    }

    public mutating func uuid(_ field: String) throws(WireError) -> UUID {
        UUID(uuid: load(at: try take(16, field)))
    }

    public mutating func string(_ field: String) throws(WireError) -> String {
        let range = try stringBytes(field, "")
        guard let text = Self.validUTF8(bytes, range) else { throw .invalidUTF8(field: field) }
        return text
    }

    /// Where the next string's bytes lie (taken, not yet checked as UTF-8). The field's label (`field` and
    /// `part`) is built only on failure: this runs for every memo read.
    private mutating func stringBytes(_ field: String, _ part: String) throws(WireError) -> Range<Int> {
        guard remaining >= 4 else { throw .truncated(field: field + part + " length") }
        let length = Int(UInt32(bigEndian: load(at: index, as: UInt32.self)))
        index += 4
        guard length <= remaining else { throw .countTooLarge(field: field + part + " length", count: UInt64(length)) }
        defer { index += length }
        return index..<(index + length)
    }

    /// The string `bytes[range]` spells, or nil when they are not valid UTF-8.
    ///
    /// `String(validating:as:)` is generic and not inlinable: from this module it runs unspecialised (BENCHMARKS.md,
    /// "Instruction counts behind the code's shape"). `String(decoding:as:)` over a buffer pointer
    /// takes the standard library's fast path but repairs invalid sequences instead of failing; a repaired string
    /// never has the input's bytes (each invalid sequence becomes U+FFFD), so comparing the bytes tells them apart.
    package static func validUTF8(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { buffer -> String? in
            let input = UnsafeBufferPointer(rebasing: buffer[range])
            var text = String(decoding: input, as: UTF8.self)
            let same = text.withUTF8 { utf8 in
                utf8.count == input.count
                    && (input.isEmpty || memcmp(utf8.baseAddress!, input.baseAddress!, input.count) == 0)
            }
            return same ? text : nil
        }
    }

    public mutating func memo() throws(WireError) -> Memo {
        let id = try uuid("memo id")
        let revision = try u64("memo revision")
        let insert = try i64("memo insert date")
        let update = try i64("memo update date")
        let content = try string("memo content")
        let author = authors ? try self.author("memo author") : .none
        return Memo(
            id: id, content: content, insertMicros: insert, updateMicros: update, revision: revision, author: author)
    }

    /// An author: name and serial (version 3).
    public mutating func author(_ field: String) throws(WireError) -> Author {
        guard sharedAuthors != nil else {
            return Author(name: try string(field + " name"), serial: try string(field + " serial"))
        }
        let name = try stringBytes(field, " name")
        let serial = try stringBytes(field, " serial")
        let shared = bytes.withUnsafeBytes { raw in
            sharedAuthors!.author(
                name: UnsafeRawBufferPointer(rebasing: raw[name]), serial: UnsafeRawBufferPointer(rebasing: raw[serial]))
        }
        guard let shared else {
            throw .invalidUTF8(field: field + (Self.validUTF8(bytes, name) == nil ? " name" : " serial"))
        }
        return shared
    }

    /// Reads a u32 count of items, each at least `minimumSize` bytes, checking it fits before anything is made.
    public mutating func count(_ field: String, minimumSize: Int) throws(WireError) -> Int {
        let count = try u32(field)
        guard UInt64(count) * UInt64(minimumSize) <= UInt64(remaining) else {
            throw .countTooLarge(field: field, count: UInt64(count))
        }
        return Int(count)
    }

    /// Throws when bytes are left over.
    public func finish() throws(WireError) {
        if remaining != 0 { throw .trailingBytes(count: remaining) }
    }
}
