import Foundation
import MemoModel
/// Memo ids for the benchmark's requests. Foundation's `UUID()` on Linux opens, reads and closes /dev/urandom
/// for every id, which made the benchmark client spend most of its kernel time making ids; these come from
/// xoshiro256** seeded once from the system generator. Unique, not unpredictable: fine for load, not for secrets.
struct BenchIDs: RandomNumberGenerator {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    init() {
        var system = SystemRandomNumberGenerator()
        state = (system.next(), system.next(), system.next(), system.next() | 1)
    }

    mutating func next() -> UInt64 {
        let result = ((state.1 &* 5) << 7 | (state.1 &* 5) >> 57) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3 << 45 | state.3 >> 19
        return result
    }

    /// A version-4, variant-1 UUID, built in place: an array per id was a large part of the client's work per
    /// create (BENCHMARKS.md, "Instruction counts behind the code's shape").
    mutating func uuid() -> UUID {
        UUID(uuid: uuidBytes())
    }

    /// The next id's 16 bytes (what the request client writes into its batch, with no `UUID` made).
    mutating func uuidBytes() -> uuid_t {
        // Big-endian words, so the bytes come out most significant first; the version nibble is byte 6, the
        // variant bits byte 8.
        let high = (next() & ~0xF000 | 0x4000).bigEndian
        let low = (next() & ~(0xC0 << 56) | (0x80 << 56)).bigEndian
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { raw in
            raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return value
    }
}
