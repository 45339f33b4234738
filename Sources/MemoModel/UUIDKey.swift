import Foundation

/// A UUID as a dictionary key, hashed by wyhash's 16-byte path instead of SipHash.
///
/// The server's table, the write planner and the SQLite rowid map are dictionaries of up to millions of
/// UUIDs; profiling in-memory creates found SipHash (through `Hasher`) and the rehashing on each growth among the
/// server's largest costs (the figures are in BENCHMARKS.md). wyhash mixes the dictionary's per-instance seed
/// into two 64x64→128-bit multiplies, so the bucket of an id still depends on a seed the client cannot see: ids
/// are chosen by clients, and a hash they could predict would let them make every insert collide.
public struct UUIDKey: Hashable, Sendable {
    public let uuid: UUID

    @inlinable public init(_ uuid: UUID) { self.uuid = uuid }

    public static func == (a: UUIDKey, b: UUIDKey) -> Bool { a.uuid == b.uuid }

    /// Used only when a `UUIDKey` is hashed as part of something else; dictionaries call `_rawHashValue`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(_rawHashValue(seed: 0))
    }

    /// `Hashable`'s hook for hashing without a `Hasher` (the standard library's integers implement it too).
    public func _rawHashValue(seed: Int) -> Int {
        let (high, low) = withUnsafeBytes(of: uuid.uuid) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        let secret0: UInt64 = 0x2d35_8dcc_aa6c_78a5
        let secret1: UInt64 = 0x8bb8_4b93_962e_acc9
        var key = UInt64(bitPattern: Int64(seed))
        key ^= Self.mix(key ^ secret0, secret1)
        let product = (high ^ secret1).multipliedFullWidth(by: low ^ key)
        return Int(truncatingIfNeeded: Self.mix(product.low ^ secret0 ^ 16, product.high ^ secret1))
    }

    @inline(__always) private static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.low ^ product.high
    }
}
