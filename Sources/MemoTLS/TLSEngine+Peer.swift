internal import COpenSSL

/// What a completed handshake established, read from the `SSL` before it may be freed by a hand-off.
struct EstablishedSession {
    /// Every CN of the peer's verified certificate, in certificate order.
    let commonNames: [String]
    /// Every OU of the peer's verified certificate, in certificate order.
    let organizationalUnits: [String]
    /// The serial number of the peer's certificate (see `CertificateSerial`), nil without one.
    let serialNumber: String?
    let protocolName: String?
    let cipherName: String?
    /// The session was resumed from a ticket.
    let resumed: Bool

    init(ssl: OpaquePointer) {
        let certificate = SSL_get0_peer_certificate(ssl)
        let name = certificate.flatMap { X509_get_subject_name($0) }
        commonNames = Self.subject(name, nid: NID_commonName)
        organizationalUnits = Self.subject(name, nid: NID_organizationalUnitName)
        serialNumber = certificate.flatMap { CertificateSerial.hex(X509_get0_serialNumber($0)) }
        protocolName = SSL_get_version(ssl).map { String(cString: $0) }
        resumed = SSL_session_reused(ssl) == 1
        cipherName = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) }
    }

    /// Every value of one field of a certificate's subject `name`, as UTF-8, in certificate order.
    static func subject(_ name: OpaquePointer?, nid: Int32) -> [String] {
        guard let name else { return [] }
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

extension TLSEngine {
    /// The CN of the peer's verified certificate, or nil before the handshake or without a certificate.
    public var peerCommonName: String? {
        established?.commonNames.last
    }

    /// The role carried in the peer certificate's OU (see `CertificateRole`); `.unknown` when none.
    ///
    /// When a certificate names both roles the weaker one, read-only, wins.
    public var peerRole: CertificateRole {
        let roles = (established?.organizationalUnits ?? []).compactMap(CertificateRole.init(organizationalUnit:))
        if roles.contains(.readOnly) { return .readOnly }
        if roles.contains(.readWrite) { return .readWrite }
        return .unknown
    }

    /// The serial number of the peer's verified certificate (upper-case hex, see `CertificateSerial`); nil
    /// before the handshake or without a certificate.
    public var peerSerialNumber: String? { established?.serialNumber }

    /// The protocol agreed in the handshake, e.g. "TLSv1.3"; nil before it completes.
    public var negotiatedProtocol: String? { established?.protocolName }

    /// The cipher suite agreed in the handshake, e.g. "TLS_AES_256_GCM_SHA384"; nil before it completes.
    public var negotiatedCipher: String? { established?.cipherName }
}
