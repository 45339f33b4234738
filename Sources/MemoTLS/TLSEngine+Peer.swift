internal import COpenSSL

extension TLSEngine {
    /// The CN of the peer's verified certificate, or nil before the handshake or without a certificate.
    public var peerCommonName: String? {
        peerSubject(nid: NID_commonName).last
    }

    /// The role carried in the peer certificate's OU (see `CertificateRole`); `.unknown` when none.
    ///
    /// When a certificate names both roles the weaker one, read-only, wins.
    public var peerRole: CertificateRole {
        let roles = peerSubject(nid: NID_organizationalUnitName).compactMap(CertificateRole.init(organizationalUnit:))
        if roles.contains(.readOnly) { return .readOnly }
        if roles.contains(.readWrite) { return .readWrite }
        return .unknown
    }

    /// The protocol agreed in the handshake, e.g. "TLSv1.3"; nil before it completes.
    public var negotiatedProtocol: String? {
        guard isHandshakeComplete, let version = SSL_get_version(ssl) else { return nil }
        return String(cString: version)
    }

    /// The cipher suite agreed in the handshake, e.g. "TLS_AES_256_GCM_SHA384"; nil before it completes.
    public var negotiatedCipher: String? {
        guard isHandshakeComplete, let cipher = SSL_get_current_cipher(ssl),
            let name = SSL_CIPHER_get_name(cipher)
        else { return nil }
        return String(cString: name)
    }

    /// Every value of one subject field of the peer certificate, as UTF-8, in certificate order.
    private func peerSubject(nid: Int32) -> [String] {
        guard isHandshakeComplete, let certificate = SSL_get0_peer_certificate(ssl),
            let name = X509_get_subject_name(certificate)
        else { return [] }
        var values: [String] = []
        var index: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, nid, index)
            if index < 0 { break }
            guard let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
                continue
            }
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            guard length >= 0, let utf8 else { continue }
            values.append(String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self))
            CMemoSSL_free(utf8)
        }
        return values
    }
}
