internal import COpenSSL
import MemoTLS

// Making keys and certificates, which only the CA tooling does; loading them for a connection is MemoTLS's.
extension PrivateKey {
    /// Generates a fresh ECDSA key on the P-256 curve.
    static func generateP256() throws(TLSError) -> PrivateKey {
        TLSError.clearQueue()
        guard let key = CMemoSSL_EC_P256_generate() else {
            throw TLSError.openSSL("generating a P-256 key")
        }
        return PrivateKey(owning: key)
    }

    /// The key as unencrypted PKCS#8 PEM.
    func pem() throws(TLSError) -> [UInt8] {
        let bio = try MemoryBIO()
        TLSError.clearQueue()
        guard PEM_write_bio_PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw TLSError.openSSL("encoding a private key")
        }
        return bio.contents()
    }
}

extension Certificate {
    /// The certificate as PEM.
    func pem() throws(TLSError) -> [UInt8] {
        let bio = try MemoryBIO()
        TLSError.clearQueue()
        guard PEM_write_bio_X509(bio.pointer, pointer) == 1 else {
            throw TLSError.openSSL("encoding a certificate")
        }
        return bio.contents()
    }

    /// What a new certificate should say about its subject and use.
    struct Profile {
        var commonName: String
        var organizationalUnit: String?
        var isCertificateAuthority: Bool
        /// `extendedKeyUsage` value, e.g. "serverAuth"; nil for none.
        var extendedKeyUsage: String?
        /// `subjectAltName` entries in OpenSSL's config syntax, e.g. "DNS:localhost", "IP:127.0.0.1".
        var subjectAltNames: [String] = []
        var validity: CertificateValidity
    }

    /// Makes an X.509 v3 certificate for `key`, signed with SHA-256 by `issuer` (self-signed when nil).
    static func issue(
        _ profile: Profile, key: PrivateKey, issuer: (certificate: Certificate, key: PrivateKey)?
    ) throws(TLSError) -> Certificate {
        let operation = "issuing certificate for \(profile.commonName)"
        TLSError.clearQueue()
        guard let raw = X509_new() else { throw TLSError.openSSL(operation) }
        let cert = Certificate(owning: raw)
        guard X509_set_version(raw, 2) == 1 else { throw TLSError.openSSL(operation) }  // 2 means v3

        // RFC 5280 asks for unpredictable serials; 128 random bits stay under the 20-byte limit.
        guard let serial = BN_new() else { throw TLSError.openSSL(operation) }
        defer { BN_free(serial) }
        guard BN_rand(serial, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
            BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(raw)) != nil
        else { throw TLSError.openSSL(operation) }

        guard X509_gmtime_adj(X509_getm_notBefore(raw), profile.validity.notBeforeOffset) != nil,
            X509_gmtime_adj(X509_getm_notAfter(raw), profile.validity.notAfterOffset) != nil
        else { throw TLSError.openSSL(operation) }

        let name = X509_get_subject_name(raw)
        var fields = [("O", "memo")]
        if let unit = profile.organizationalUnit { fields.append(("OU", unit)) }
        fields.append(("CN", profile.commonName))
        for (field, value) in fields {
            guard X509_NAME_add_entry_by_txt(name, field, CMemoSSL_MBSTRING_UTF8(), value, -1, -1, 0) == 1 else {
                throw TLSError.openSSL(operation, detail: "subject field \(field)")
            }
        }
        let issuerName = issuer.map { X509_get_subject_name($0.certificate.pointer) } ?? name
        guard X509_set_pubkey(raw, key.pointer) == 1, X509_set_issuer_name(raw, issuerName) == 1 else {
            throw TLSError.openSSL(operation)
        }

        var extensions: [(Int32, String)] = []
        if profile.isCertificateAuthority {
            extensions.append((NID_basic_constraints, "critical,CA:TRUE,pathlen:0"))
            extensions.append((NID_key_usage, "critical,keyCertSign,cRLSign"))
        } else {
            extensions.append((NID_basic_constraints, "critical,CA:FALSE"))
            extensions.append((NID_key_usage, "critical,digitalSignature"))
        }
        if let usage = profile.extendedKeyUsage { extensions.append((NID_ext_key_usage, usage)) }
        if !profile.subjectAltNames.isEmpty {
            extensions.append((NID_subject_alt_name, profile.subjectAltNames.joined(separator: ",")))
        }
        // The subject key identifier must exist before the authority key identifier of a self-signed CA.
        extensions.append((NID_subject_key_identifier, "hash"))
        extensions.append((NID_authority_key_identifier, "keyid:always"))

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate.pointer ?? raw, raw, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw TLSError.openSSL(operation, detail: "extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(raw, ext, -1) == 1 else { throw TLSError.openSSL(operation) }
        }

        guard X509_sign(raw, issuer?.key.pointer ?? key.pointer, EVP_sha256()) > 0 else {
            throw TLSError.openSSL(operation, detail: "signing")
        }
        return cert
    }
}
