/// Protocol constants.
public enum WireProtocol {
    /// The newest protocol version this build speaks. Version 2 adds `list-page` and its answer `page`; version 3
    /// adds authors to every memo on the wire, the `update` flags byte, `history`, `trash` and `restore`.
    public static let version: UInt16 = 3
    /// The first version whose memos carry their author.
    public static let authorsVersion: UInt16 = 3
    /// The oldest version this build still speaks: a version 1 peer is served as before.
    public static let minimumVersion: UInt16 = 1
    /// The default largest frame, length prefix included.
    public static let defaultMaxFrameSize = 1 << 20
    /// The smallest frame: the length prefix, the type and the request id.
    public static let headerSize = 9
    /// Where a frame's request id lies: after the length prefix and the type.
    public static let requestIDOffset = 5
    /// The most versions or trash entries one `history` or `trash` answer holds: the server cuts a larger limit to
    /// it, and memo-client asks for at most this many per request.
    public static let maxVersionsPage: UInt32 = 1000
}

/// One frame: `u32 length | u8 type | u32 request id | payload`, where length counts everything after itself.
public struct Frame: Hashable, Sendable {
    public var type: UInt8
    public var requestID: UInt32
    public var payload: [UInt8]

    public init(type: UInt8, requestID: UInt32, payload: [UInt8]) {
        self.type = type
        self.requestID = requestID
        self.payload = payload
    }

    /// The frame's bytes, length prefix first.
    public var bytes: [UInt8] {
        var writer = WireWriter(capacity: WireProtocol.headerSize + payload.count)
        writer.u32(UInt32(5 + payload.count))
        writer.u8(type)
        writer.u32(requestID)
        writer.bytes.append(contentsOf: payload)
        return writer.bytes
    }
}

/// Cuts a byte stream into frames. Feed it whatever a read returned; it returns nothing for a partial frame and
/// keeps the bytes, and it rejects a length over the limit as soon as the four length bytes are in, before it
/// allocates anything for the frame.
public struct FrameDecoder: Sendable {
    public let maxFrameSize: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    public init(maxFrameSize: Int = WireProtocol.defaultMaxFrameSize) {
        precondition(maxFrameSize >= WireProtocol.headerSize, "the frame limit must hold a frame header")
        self.maxFrameSize = maxFrameSize
    }

    /// Bytes received and not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        compact()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            readIndex = 0
        } else if readIndex > 4096 && readIndex * 2 > buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// Whether `next()` would return a frame or throw, rather than ask for more bytes.
    public var hasWholeFrame: Bool {
        let available = buffer.count - readIndex
        guard available >= 4 else { return false }
        var length = 0
        for i in 0..<4 { length = length << 8 | Int(buffer[readIndex + i]) }
        return length < 5 || length + 4 > maxFrameSize || available >= 4 + length
    }

    /// The next whole frame, or nil when more bytes are needed.
    /// - Throws: `frameTooLarge` or `frameTooShort`; the stream cannot be resynchronised after either.
    public mutating func next() throws(WireError) -> Frame? {
        guard let (type, requestID, payload) = try nextRange() else { return nil }
        return Frame(type: type, requestID: requestID, payload: Array(buffer[payload]))
    }

    /// Like `next`, but the payload is read where it lies in the decoder's buffer instead of being copied into an
    /// array of its own (the server decodes every request this way: one allocation and copy fewer per request).
    /// The reader holds the buffer; let it go before appending again, or the append copies the buffer.
    public mutating func nextPayload() throws(WireError) -> (type: UInt8, requestID: UInt32, payload: WireReader)? {
        guard let (type, requestID, payload) = try nextRange() else { return nil }
        return (type, requestID, WireReader(buffer, range: payload))
    }

    /// The next whole frame's type, request id and where its payload lies in `buffer`, consumed.
    private mutating func nextRange() throws(WireError) -> (UInt8, UInt32, Range<Int>)? {
        let available = buffer.count - readIndex
        guard available >= 4 else { return nil }
        var length: UInt32 = 0
        for i in 0..<4 { length = length << 8 | UInt32(buffer[readIndex + i]) }
        guard UInt64(length) + 4 <= UInt64(maxFrameSize) else {
            throw .frameTooLarge(length: length, limit: maxFrameSize)
        }
        guard length >= 5 else { throw .frameTooShort(length: length) }
        guard available >= 4 + Int(length) else { return nil }
        let start = readIndex + 4
        let type = buffer[start]
        var requestID: UInt32 = 0
        for i in 1...4 { requestID = requestID << 8 | UInt32(buffer[start + i]) }
        readIndex = start + Int(length)
        return (type, requestID, (start + 5)..<readIndex)
    }
}
