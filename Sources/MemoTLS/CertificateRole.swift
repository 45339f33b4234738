/// The access a client certificate grants.
///
/// The role travels inside the certificate: the subject's organizationalUnitName (OU) is
/// "memo-role=read-only" or "memo-role=read-write". The server trusts it because only the CA can sign it.
public enum CertificateRole: String, Sendable, Hashable {
    case readOnly = "read-only"
    case readWrite = "read-write"
    /// The certificate carries no memo role (a server certificate, or one made elsewhere).
    case unknown

    /// The OU value that carries this role.
    package var organizationalUnit: String { "memo-role=\(rawValue)" }

    /// The role named by an OU value, or nil when the OU is not a memo role.
    package init?(organizationalUnit: String) {
        switch organizationalUnit {
        case CertificateRole.readOnly.organizationalUnit: self = .readOnly
        case CertificateRole.readWrite.organizationalUnit: self = .readWrite
        default: return nil
        }
    }
}
