internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// What an operator needs to know about one certificate: who it names, its serial and when it expires.
public struct CertificateInfo: Sendable, Hashable {
    /// The subject's CN (the last one when there are several).
    public let commonName: String
    /// The memo role in the subject's OU; `.unknown` for a server certificate or the CA.
    public let role: CertificateRole
    /// The issuer's CN (the CA that signed it).
    public let issuerCommonName: String
    /// The serial number in upper-case hex without leading zeros (see `CertificateSerial`).
    public let serial: String
    /// notBefore and notAfter as Unix seconds (UTC).
    public let notBefore: Int64
    public let notAfter: Int64
    /// The subjectAltName entries as OpenSSL prints them ("DNS:localhost, IP Address:127.0.0.1"), or nil.
    public let subjectAltNames: String?
    /// Whether the certificate may sign others (basicConstraints CA:TRUE).
    public let isCertificateAuthority: Bool
    /// Whether its extendedKeyUsage allows serverAuth (a server certificate).
    public let isServerCertificate: Bool
    /// The SHA-256 of the certificate's DER encoding, 64 lower-case hex digits (`openssl x509 -fingerprint
    /// -sha256` without the colons): what a client's offline queue is bound to.
    public let fingerprint: String

    /// Reads the first PEM certificate in `path`.
    /// - Throws: `TLSError` (`.fileSystem` for a missing file, `.openSSL` for one that is not a certificate).
    public init(path: String) throws(TLSError) {
        self.init(try Certificate.load(path: path))
    }

    package init(_ certificate: Certificate) {
        let raw = certificate.pointer
        let subject = EstablishedSession.subject(X509_get_subject_name(raw), nid: NID_commonName)
        commonName = subject.last ?? ""
        let units = EstablishedSession.subject(X509_get_subject_name(raw), nid: NID_organizationalUnitName)
        let roles = units.compactMap(CertificateRole.init(organizationalUnit:))
        role = roles.contains(.readOnly) ? .readOnly : roles.first ?? .unknown
        issuerCommonName = EstablishedSession.subject(X509_get_issuer_name(raw), nid: NID_commonName).last ?? ""
        serial = CertificateSerial.hex(X509_get0_serialNumber(raw)) ?? ""
        notBefore = UTCTime.seconds(X509_get0_notBefore(raw)) ?? 0
        notAfter = UTCTime.seconds(X509_get0_notAfter(raw)) ?? 0
        isCertificateAuthority = X509_check_ca(raw) != 0
        isServerCertificate =
            !isCertificateAuthority && (X509_get_extended_key_usage(raw) & UInt32(XKU_SSL_SERVER)) != 0
        subjectAltNames = Self.printedExtension(raw, nid: NID_subject_alt_name)
        fingerprint = Self.sha256(raw)
    }

    private static func sha256(_ raw: OpaquePointer) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // Fails only when OpenSSL cannot allocate; an empty fingerprint then matches no queue (nothing replays).
        guard X509_digest(raw, EVP_sha256(), &digest, &length) == 1 else { return "" }
        return digest.prefix(Int(length)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Seconds from `now` until notAfter (negative once expired).
    public func secondsLeft(now: Int64 = UTCTime.now()) -> Int64 { notAfter - now }

    private static func printedExtension(_ raw: OpaquePointer, nid: Int32) -> String? {
        let index = X509_get_ext_by_NID(raw, nid, -1)
        guard index >= 0, let ext = X509_get_ext(raw, index), let bio = try? MemoryBIO() else { return nil }
        guard X509V3_EXT_print(bio.pointer, ext, 0, 0) == 1 else { return nil }
        return String(decoding: bio.contents(), as: UTF8.self)
    }
}

/// Serial numbers as text: upper-case hex, no leading zeros, as `openssl x509 -serial` prints them once its
/// leading zero (if any) is dropped.
public enum CertificateSerial {
    /// `text` normalised for comparison (case, "0x", colons and leading zeros removed), or nil when it is not
    /// a hex number.
    public static func normalized(_ text: String) -> String? {
        var digits = String(text.uppercased().filter { $0 != ":" })
        if digits.hasPrefix("0X") { digits.removeFirst(2) }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ isHexDigit($0) }) else { return nil }
        let trimmed = digits.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    static func hex(_ integer: UnsafePointer<ASN1_INTEGER>?) -> String? {
        guard let integer, let number = ASN1_INTEGER_to_BN(integer, nil) else { return nil }
        defer { BN_free(number) }
        guard let text = BN_bn2hex(number) else { return nil }
        defer { CMemoSSL_free(text) }
        return normalized(String(cString: text))
    }
}

/// UTC times as Unix seconds and as `2026-11-30T17:02:00Z` text, without Foundation.
public enum UTCTime {
    public static func now() -> Int64 { Int64(time(nil)) }

    /// `seconds` as ISO 8601 in UTC to the second.
    public static func format(_ seconds: Int64) -> String {
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        func pad(_ number: Int32, _ width: Int) -> String {
            let digits = String(number)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))Z"
    }

    /// Parses what `format` writes; nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int64(timegm(&parts))
    }

    /// An ASN1_TIME as Unix seconds.
    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
