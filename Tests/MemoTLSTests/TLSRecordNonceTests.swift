@testable import MemoTLS
import Testing

/// The record layer's per-record nonce path: AES-GCM contexts take each record's nonce through one parameter
/// round instead of a re-initialisation. These records must be the very bytes the re-initialising path makes,
/// and a record whose tag does not verify must still be refused.
@Suite("TLS 1.3 record nonces")
struct TLSRecordNonceTests {
    static let suites: [UInt16] = [0x1301, 0x1302, 0x1303]
    static let secret = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    /// Seals `content` as one record; returns header, body and tag together.
    static func seal(_ protection: RecordProtection, _ content: [UInt8]) throws -> [UInt8] {
        var record: [UInt8] = [23, 3, 3, UInt8((content.count + 16) >> 8), UInt8((content.count + 16) & 0xFF)]
        record += content
        record += [UInt8](repeating: 0, count: 16)
        let sealed = record.withUnsafeMutableBytes { raw in
            protection.crypt(header: raw.baseAddress!,
                             body: UnsafeMutableRawBufferPointer(rebasing: raw[5..<(5 + content.count)]),
                             tag: raw.baseAddress! + 5 + content.count)
        }
        try #require(sealed)
        return record
    }

    /// Opens one record from `seal`; nil when it does not verify.
    static func open(_ protection: RecordProtection, _ record: [UInt8]) -> [UInt8]? {
        var record = record
        let length = record.count - 5 - 16
        let opened = record.withUnsafeMutableBytes { raw in
            protection.crypt(header: raw.baseAddress!,
                             body: UnsafeMutableRawBufferPointer(rebasing: raw[5..<(5 + length)]),
                             tag: raw.baseAddress! + 5 + length)
        }
        return opened ? Array(record[5..<(5 + length)]) : nil
    }

    /// One direction of the suite's protection under the test secret; `reinitialising` forces the reference path.
    static func protection(_ protocolID: UInt16, encrypting: Bool, reinitialising: Bool = false) throws
        -> RecordProtection
    {
        let suite = try #require(TLS13Suite(protocolID: protocolID))
        let key = Array(secret.prefix(suite.hashLength))
        let made = RecordProtection(suite: suite, secret: key, encrypting: encrypting)
        if reinitialising { made.noncesThroughParameters = false }
        return made
    }

    @Test(arguments: suites)
    func recordsAreTheBytesOfTheReinitialisingPathAndOpenEitherWay(protocolID: UInt16) throws {
        let sealer = try Self.protection(protocolID, encrypting: true)
        let reference = try Self.protection(protocolID, encrypting: true, reinitialising: true)
        let opener = try Self.protection(protocolID, encrypting: false)
        let referenceOpener = try Self.protection(protocolID, encrypting: false, reinitialising: true)
        // Past 256 records, so that the nonce's sequence bytes beyond the last one change too.
        for index in 0..<300 {
            let content = (0..<(index % 97)).map { UInt8(truncatingIfNeeded: $0 &+ index) } + [23]
            let record = try Self.seal(sealer, content)
            #expect(record == (try Self.seal(reference, content)), "record \(index)")
            #expect(Self.open(opener, record) == content, "record \(index)")
            #expect(Self.open(referenceOpener, record) == content, "record \(index)")
        }
        // The cheaper path is the one taken for AES-GCM (ChaCha20-Poly1305 has no whole-IV parameter).
        let expected = protocolID != 0x1303
        #expect(sealer.noncesThroughParameters == expected)
        #expect(opener.noncesThroughParameters == expected)
    }

    @Test(arguments: suites)
    func aRecordThatDoesNotVerifyOrIsReplayedIsRefused(protocolID: UInt16) throws {
        let sealer = try Self.protection(protocolID, encrypting: true)
        let opener = try Self.protection(protocolID, encrypting: false)
        let first = try Self.seal(sealer, Array("first".utf8) + [23])
        for flipped in [first.count - 1, 5, 2] {  // the tag, the body, the header (additional data)
            var bad = first
            bad[flipped] ^= 0x01
            let fresh = try Self.protection(protocolID, encrypting: false)
            #expect(Self.open(fresh, bad) == nil, "byte \(flipped) flipped")
        }
        #expect(Self.open(opener, first) == Array("first".utf8) + [23])
        // A record under the wrong sequence number (a replay of the first) does not verify.
        #expect(Self.open(opener, first) == nil)
    }
}
