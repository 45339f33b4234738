import Foundation

extension UUID {
    /// The 16 bytes of the UUID, as stored and sent.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: uuid) { Array($0) }
    }

    /// A UUID from exactly 16 bytes (an array or a slice of a larger buffer, read in place).
    @inlinable
    public init?<Bytes: Collection<UInt8>>(bytes: Bytes) {
        guard bytes.count == 16 else { return nil }
        // Contiguous bytes (an array or its slice: every caller here) are loaded as one 16-byte value rather than
        // copied one by one through the generic collection (one id per request).
        if let value = bytes.withContiguousStorageIfAvailable({
            UnsafeRawBufferPointer($0).loadUnaligned(as: uuid_t.self)
        }) {
            self.init(uuid: value)
            return
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { raw in
            for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
        }
        self.init(uuid: value)
    }
}
