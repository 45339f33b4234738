internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A certificate revocation list (X.509 v2 CRL) signed by the memo CA: the serials it no longer vouches for.
///
/// It has no nextUpdate: a CRL that expired would make OpenSSL refuse every client, and this CA publishes a
/// new list only when it revokes something. The server loads it with `X509_V_FLAG_CRL_CHECK` (see
/// `TLSConfiguration.revocationListPath`).
public struct RevocationList: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        /// Normalised hex (see `CertificateSerial`).
        public var serial: String
        /// Unix seconds.
        public var revokedAt: Int64

        public init(serial: String, revokedAt: Int64) {
            self.serial = serial
            self.revokedAt = revokedAt
        }
    }

    /// The name of the file beside `ca.crt`.
    public static let fileName = "ca.crl"

    public let entries: [Entry]
    /// The crlNumber extension: 1 for the first list, one more for each list after it.
    public let number: Int
    /// Every revoked serial, for lookups.
    public var serials: Set<String> { Set(entries.map(\.serial)) }

    /// Reads the PEM CRL at `path` and checks that the CA in `caCertificatePath` issued and signed it, so that
    /// a list from another CA is refused here rather than making OpenSSL refuse every client.
    /// - Throws: `TLSError` (`.fileSystem`, `.openSSL` for a file that is not a CRL, `.invalidArgument` for a
    ///   list the CA did not sign).
    public static func load(path: String, caCertificatePath: String) throws(TLSError) -> RevocationList {
        let ca = try Certificate.load(path: caCertificatePath)
        let crl = try read(path)
        defer { X509_CRL_free(crl) }
        guard X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca.pointer)) == 0,
            let key = X509_get0_pubkey(ca.pointer), X509_CRL_verify(crl, key) == 1
        else {
            TLSError.clearQueue()
            throw TLSError(
                kind: .invalidArgument, operation: "loading revocation list \(path)",
                detail: "it was not signed by the CA in \(caCertificatePath)")
        }
        var entries: [Entry] = []
        for index in 0..<CMemoSSL_CRL_revoked_count(crl) {
            guard let revoked = CMemoSSL_CRL_revoked_at(crl, index),
                let serial = CertificateSerial.hex(X509_REVOKED_get0_serialNumber(revoked))
            else { continue }
            let date = UTCTime.seconds(X509_REVOKED_get0_revocationDate(revoked)) ?? 0
            entries.append(Entry(serial: serial, revokedAt: date))
        }
        var number = 0
        if let raw = X509_CRL_get_ext_d2i(crl, NID_crl_number, nil, nil) {
            let integer = raw.assumingMemoryBound(to: ASN1_INTEGER.self)
            number = Int(ASN1_INTEGER_get(integer))
            ASN1_INTEGER_free(integer)
        }
        return RevocationList(entries: entries, number: number)
    }

    /// Makes the verifier of `context` check client certificates against the list at `path`.
    static func install(_ path: String, into context: OpaquePointer) throws(TLSError) {
        let crl = try read(path)
        defer { X509_CRL_free(crl) }
        TLSError.clearQueue()
        guard let store = SSL_CTX_get_cert_store(context), X509_STORE_add_crl(store, crl) == 1,
            X509_STORE_set_flags(store, UInt(X509_V_FLAG_CRL_CHECK)) == 1
        else { throw TLSError.openSSL("loading revocation list \(path)") }
    }

    /// The first PEM CRL in `path`; the caller frees it.
    private static func read(_ path: String) throws(TLSError) -> OpaquePointer {
        let bio = try MemoryBIO.readingFile(path)
        TLSError.clearQueue()
        guard let crl = PEM_read_bio_X509_CRL(bio.pointer, nil, nil, nil) else {
            throw TLSError.openSSL("loading revocation list \(path)")
        }
        return crl
    }
}
