internal import COpenSSL

/// An error from TLS setup, certificate handling or a TLS session, carrying OpenSSL's own reason strings.
///
/// `kind` is meant for callers that map failures to exit codes or user messages; `description` is the full text.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in terms a user can act on.
    public enum Kind: Sendable, Hashable, CaseIterable {
        /// The server requires a client certificate and the client sent none.
        case noClientCertificate
        /// The peer's certificate was not issued by a CA we trust (or ours by one the peer trusts).
        case unknownCA
        /// A certificate in the chain is past its notAfter date.
        case certificateExpired
        /// The CA revoked the certificate (it is on the CA's revocation list).
        case certificateRevoked
        /// A certificate in the chain is before its notBefore date.
        case certificateNotYetValid
        /// The server certificate does not name the host or IP address we connected to.
        case hostnameMismatch
        /// A certificate was refused for another reason (the peer's alert often does not say which).
        case certificateRejected
        /// No TLS version acceptable to both sides (for example a TLS 1.1-only peer).
        case protocolVersion
        /// The bytes received are not TLS records (plain text, HTTP, random data).
        case notTLS
        /// Any other TLS failure during or after the handshake.
        case tlsFailure
        /// A file we were asked to create already exists.
        case fileExists
        /// A caller-supplied value (name, host, path) is not acceptable.
        case invalidArgument
        /// Reading or writing a file failed.
        case fileSystem
        /// An OpenSSL call outside a TLS session failed (loading keys, generating certificates).
        case openSSL

        /// A short, clear description of the kind.
        public var summary: String {
            switch self {
            case .noClientCertificate: return "client sent no certificate"
            case .unknownCA: return "certificate signed by an unknown CA"
            case .certificateExpired: return "certificate expired"
            case .certificateRevoked: return "certificate revoked"
            case .certificateNotYetValid: return "certificate not yet valid"
            case .hostnameMismatch: return "certificate does not match the server name"
            case .certificateRejected: return "certificate rejected"
            case .protocolVersion: return "protocol version not supported"
            case .notTLS: return "peer is not speaking TLS"
            case .tlsFailure: return "TLS failure"
            case .fileExists: return "file already exists"
            case .invalidArgument: return "invalid argument"
            case .fileSystem: return "file system error"
            case .openSSL: return "OpenSSL error"
            }
        }
    }

    /// The classification of the failure.
    public let kind: Kind
    /// What was being done, e.g. "TLS handshake (server)" or "loading /etc/memo/ca.key".
    public let operation: String
    /// Extra explanation that is not from OpenSSL (a path, a hint), if any.
    public let detail: String?
    /// The `detail` of a failure the peer reported with an alert: its verdict (it refused our certificate), not ours.
    public static let peerAlertDetail = "reported by the peer's alert"

    /// Whether the peer refused (its alert), rather than this side.
    public var isPeersVerdict: Bool { detail == Self.peerAlertDetail }

    /// The X.509 verification result as OpenSSL words it, when verification failed.
    public let verifyResult: String?
    /// OpenSSL's reason strings from the thread's error queue, oldest first.
    public let reasons: [String]

    public init(
        kind: Kind, operation: String, detail: String? = nil, verifyResult: String? = nil, reasons: [String] = []
    ) {
        self.kind = kind
        self.operation = operation
        self.detail = detail
        self.verifyResult = verifyResult
        self.reasons = reasons
    }

    public var description: String {
        // A file OpenSSL could not use, for a reason a user can act on: said in those words, not OpenSSL's.
        if kind == .openSSL, let plain = reasons.lazy.compactMap(Self.plainReason).first {
            return "\(operation): \(plain)"
        }
        var text = "\(operation): \(kind.summary)"
        if let detail { text += ": \(detail)" }
        var notes: [String] = []
        if let verifyResult { notes.append("verify: \(verifyResult)") }
        if !reasons.isEmpty { notes.append("OpenSSL: " + reasons.joined(separator: "; ")) }
        if !notes.isEmpty { text += " (" + notes.joined(separator: ", ") + ")" }
        return text
    }
}

extension TLSError {
    /// OpenSSL's reason for refusing a key or certificate file, in the user's terms; nil when there is none.
    static func plainReason(_ reason: String) -> String? {
        switch reason {
        case "key values mismatch": return "the key does not belong to this certificate"
        case "no start line": return "not a PEM file (no -----BEGIN line)"
        case "unsupported": return "not a key or certificate OpenSSL can read"
        default: return nil
        }
    }
}

/// One entry of OpenSSL's per-thread error queue.
struct OpenSSLErrorEntry {
    let library: Int32
    let reason: Int32
    let text: String
}

extension TLSError {
    /// Empties this thread's OpenSSL error queue; call right before an OpenSSL call whose failure we report.
    package static func clearQueue() {
        ERR_clear_error()
    }

    /// Takes every entry from this thread's OpenSSL error queue, oldest first.
    static func drainQueue() -> [OpenSSLErrorEntry] {
        var entries: [OpenSSLErrorEntry] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            let text: String
            if let reason = ERR_reason_error_string(code) {
                text = String(cString: reason)
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            entries.append(OpenSSLErrorEntry(library: ERR_GET_LIB(code), reason: ERR_GET_REASON(code), text: text))
        }
        return entries
    }

    /// An error for a failed OpenSSL call outside a session, with the queue's reasons.
    package static func openSSL(_ operation: String, kind: Kind = .openSSL, detail: String? = nil) -> TLSError {
        TLSError(kind: kind, operation: operation, detail: detail, reasons: drainQueue().map(\.text))
    }

    /// Classifies a failed handshake, read or write on `ssl` from the verify result and the error queue.
    ///
    /// The local verify result wins (it says exactly why we refused the peer's certificate); otherwise the
    /// queue's reasons say why the peer refused us (its alert) or why the bytes did not parse.
    static func session(_ operation: String, ssl: OpaquePointer, sslError: Int32) -> TLSError {
        let entries = drainQueue()
        let reasons = entries.map(\.text)
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            let verifyText = String(cString: X509_verify_cert_error_string(verify))
            return TLSError(
                kind: kind(verifyResult: Int32(verify)), operation: operation, verifyResult: verifyText,
                reasons: reasons)
        }
        let handshakeDone = SSL_is_init_finished(ssl) == 1
        for entry in entries where entry.library == ERR_LIB_SSL {
            if let kind = kind(sslReason: entry.reason, handshakeDone: handshakeDone) {
                // Say who refused: "certificate expired" reads differently when it is the peer's verdict.
                let detail = entry.text.contains("alert") ? Self.peerAlertDetail : nil
                return TLSError(kind: kind, operation: operation, detail: detail, reasons: reasons)
            }
        }
        if reasons.isEmpty {
            return TLSError(kind: .tlsFailure, operation: operation, detail: "SSL_get_error returned \(sslError)")
        }
        return TLSError(kind: .tlsFailure, operation: operation, reasons: reasons)
    }

    /// Maps an X.509 verification result (`X509_V_ERR_*`) to a kind.
    static func kind(verifyResult code: Int32) -> Kind {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            return .certificateExpired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            return .certificateNotYetValid
        case X509_V_ERR_CERT_REVOKED:
            return .certificateRevoked
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_CERT_SIGNATURE_FAILURE:
            return .unknownCA
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            return .hostnameMismatch
        default:
            return .certificateRejected
        }
    }

    /// Maps a TLS alert the peer sent after the handshake (RFC 8446 §6.2) to a kind: in TLS 1.3 a server
    /// refuses a client certificate after the client has finished its handshake.
    static func kind(alert: UInt8) -> Kind {
        switch alert {
        case 116: return .noClientCertificate  // certificate_required
        case 48: return .unknownCA
        case 45: return .certificateExpired
        case 44: return .certificateRevoked
        case 42, 43, 46, 49: return .certificateRejected  // bad, unsupported, unknown; access denied
        case 70: return .protocolVersion
        default: return .tlsFailure
        }
    }

    /// Maps an SSL-library reason code to a kind, or nil when the reason says nothing specific.
    ///
    /// Alerts received from the peer (`*_ALERT_*`) are how a client learns why a server refused it.
    /// A server refusing a not-yet-valid certificate sends the generic "bad certificate" alert, so the
    /// client side can only say `.certificateRejected` for that case.
    static func kind(sslReason reason: Int32, handshakeDone: Bool) -> Kind? {
        switch reason {
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            return .noClientCertificate
        case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
            return .unknownCA
        case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
            return .certificateExpired
        case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
            return .certificateRevoked
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN,
            SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE, SSL_R_TLSV1_ALERT_ACCESS_DENIED:
            return .certificateRejected
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_VERSION_TOO_LOW, SSL_R_VERSION_TOO_HIGH,
            SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_UNSUPPORTED_SSL_VERSION,
            SSL_R_WRONG_SSL_VERSION:
            return .protocolVersion
        case SSL_R_WRONG_VERSION_NUMBER, SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_UNKNOWN_PROTOCOL,
            SSL_R_PACKET_LENGTH_TOO_LONG, SSL_R_UNEXPECTED_RECORD, SSL_R_RECORD_LENGTH_MISMATCH,
            SSL_R_LENGTH_TOO_SHORT, SSL_R_BAD_PACKET_LENGTH:
            // Before the handshake completes these mean the first bytes were not a TLS record at all;
            // afterwards they are a broken TLS stream, reported as a plain failure.
            return handshakeDone ? nil : .notTLS
        default:
            return nil
        }
    }
}
