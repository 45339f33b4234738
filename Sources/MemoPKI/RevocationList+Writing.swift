internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import MemoTLS

// Making a revocation list is the CA's; loading one for a server is MemoTLS's.
extension RevocationList {
    /// Signs a list of `entries` with the CA's key and replaces the file at `path` in one rename, so that a
    /// server reloading meanwhile reads the old list or the new one, never half of one.
    static func write(
        _ entries: [Entry], number: Int, to path: String, ca: Certificate, key: PrivateKey
    ) throws(TLSError) {
        let operation = "writing revocation list \(path)"
        TLSError.clearQueue()
        guard let crl = X509_CRL_new() else { throw TLSError.openSSL(operation) }
        defer { X509_CRL_free(crl) }
        guard X509_CRL_set_version(crl, 1) == 1,  // 1 means v2, needed for extensions
            X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca.pointer)) == 1,
            // Five minutes back, as for certificates: a verifier whose clock is a little behind must not see a
            // list from the future (X509_V_ERR_CRL_NOT_YET_VALID refuses every client).
            let updated = ASN1_TIME_set(nil, time_t(UTCTime.now() - 300))
        else { throw TLSError.openSSL(operation) }
        defer { ASN1_TIME_free(updated) }
        guard X509_CRL_set1_lastUpdate(crl, updated) == 1 else { throw TLSError.openSSL(operation) }

        for entry in entries {
            guard let revoked = X509_REVOKED_new() else { throw TLSError.openSSL(operation) }
            guard let serial = CertificateSerial.integer(entry.serial),
                let date = ASN1_TIME_set(nil, time_t(entry.revokedAt))
            else {
                X509_REVOKED_free(revoked)
                throw TLSError.openSSL(operation, detail: "serial \(entry.serial)")
            }
            let set = X509_REVOKED_set_serialNumber(revoked, serial) == 1
                && X509_REVOKED_set_revocationDate(revoked, date) == 1
            ASN1_INTEGER_free(serial)
            ASN1_TIME_free(date)
            guard set, X509_CRL_add0_revoked(crl, revoked) == 1 else {
                X509_REVOKED_free(revoked)
                throw TLSError.openSSL(operation, detail: "serial \(entry.serial)")
            }
        }

        guard let crlNumber = ASN1_INTEGER_new() else { throw TLSError.openSSL(operation) }
        defer { ASN1_INTEGER_free(crlNumber) }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, ca.pointer, nil, nil, crl, 0)
        guard ASN1_INTEGER_set(crlNumber, number) == 1,
            X509_CRL_add1_ext_i2d(crl, NID_crl_number, UnsafeMutableRawPointer(crlNumber), 0, 0) == 1,
            let authority = X509V3_EXT_conf_nid(nil, &context, NID_authority_key_identifier, "keyid:always")
        else { throw TLSError.openSSL(operation, detail: "extensions") }
        defer { X509_EXTENSION_free(authority) }
        guard X509_CRL_add_ext(crl, authority, -1) == 1, X509_CRL_sort(crl) == 1,
            X509_CRL_sign(crl, key.pointer, EVP_sha256()) > 0
        else { throw TLSError.openSSL(operation, detail: "signing") }

        let bio = try MemoryBIO()
        guard PEM_write_bio_X509_CRL(bio.pointer, crl) == 1 else { throw TLSError.openSSL(operation) }
        try CertificateFiles.replace(bio.contents(), at: path, mode: CertificateFiles.certificateMode)
    }
}

extension CertificateSerial {
    /// A new ASN1_INTEGER holding the hex `serial` (already normalised); the caller frees it.
    static func integer(_ serial: String) -> UnsafeMutablePointer<ASN1_INTEGER>? {
        var number: OpaquePointer?
        guard BN_hex2bn(&number, serial) > 0, let number else { return nil }
        defer { BN_free(number) }
        return BN_to_ASN1_INTEGER(number, nil)
    }
}
