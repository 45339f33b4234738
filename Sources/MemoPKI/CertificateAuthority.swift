internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import MemoTLS

/// When a new certificate is valid, as offsets in seconds from the moment it is made.
public struct CertificateValidity: Sendable, Hashable {
    /// Seconds from now to notBefore (negative = in the past).
    public var notBeforeOffset: Int
    /// Seconds from now to notAfter.
    public var notAfterOffset: Int

    public init(notBeforeOffset: Int, notAfterOffset: Int) {
        self.notBeforeOffset = notBeforeOffset
        self.notAfterOffset = notAfterOffset
    }

    /// Valid from five minutes ago (tolerating small clock skew) for `days` days.
    public static func days(_ days: Int) -> CertificateValidity {
        CertificateValidity(notBeforeOffset: -300, notAfterOffset: days * 86_400)
    }

    /// Ten years, the default for a CA.
    public static let certificateAuthorityDefault = days(3650)
    /// 825 days, the default for server certificates.
    public static let leafDefault = days(825)
    /// 365 days, the default for client certificates (`certs client --days N` chooses another).
    public static let clientDefault = days(365)
    /// Expired yesterday (for tests).
    public static let expired = CertificateValidity(notBeforeOffset: -2 * 86_400, notAfterOffset: -86_400)
    /// Valid only from tomorrow (for tests).
    public static let notYetValid = CertificateValidity(notBeforeOffset: 86_400, notAfterOffset: 2 * 86_400)
}

/// The files written by `CertificateAuthority.initialize`.
public struct CertInitResult: Sendable, Hashable {
    public let directory: String
    public let caCertificatePath: String
    public let caKeyPath: String
    public let serverCertificatePath: String
    public let serverKeyPath: String
    public let clientCertificatePath: String
    public let clientKeyPath: String
    /// The index of issued certificates (`CertificateIndex`).
    public let indexPath: String
    /// The server certificate's subjectAltName entries, e.g. "DNS:localhost", "IP:127.0.0.1".
    public let serverNames: [String]

    /// Every file written: certificates, keys and the index.
    public var files: [String] {
        [caCertificatePath, caKeyPath, serverCertificatePath, serverKeyPath, clientCertificatePath, clientKeyPath,
         indexPath]
    }
}

/// A client certificate and key written by `CertificateAuthority.issueClient`.
public struct IssuedCertificate: Sendable, Hashable {
    public let certificatePath: String
    public let keyPath: String
    public let commonName: String
    public let role: CertificateRole
}

/// Makes the memo CA and the certificates it signs: ECDSA P-256 keys, SHA-256 signatures, X.509 v3.
public enum CertificateAuthority {
    /// Creates `ca.crt`/`ca.key`, `server.crt`/`server.key`, a first read-write `client.crt`/`client.key` and
    /// the index `ca.index`; a revocation list of an earlier CA (`ca.crl`) is removed with `force`.
    ///
    /// - Parameters:
    ///   - directory: where to write; created with mode 0700 if missing.
    ///   - hosts: extra names for the server certificate, added to localhost, 127.0.0.1 and ::1. Each becomes
    ///     an IP SAN if it parses as an IP address, else a DNS SAN.
    ///   - force: replace existing files; without it an existing file is an error naming that file.
    /// - Throws: `TLSError` with `.fileExists`, `.invalidArgument`, `.fileSystem` or `.openSSL`.
    public static func initialize(
        directory: String, hosts: [String] = [], force: Bool = false,
        caValidity: CertificateValidity = .certificateAuthorityDefault,
        serverValidity: CertificateValidity = .leafDefault,
        clientValidity: CertificateValidity = .clientDefault
    ) throws(TLSError) -> CertInitResult {
        let serverNames = try serverNames(hosts)
        let path = { (name: String) in CertificateFiles.join(directory, name) }
        let result = CertInitResult(
            directory: directory, caCertificatePath: path("ca.crt"), caKeyPath: path("ca.key"),
            serverCertificatePath: path("server.crt"), serverKeyPath: path("server.key"),
            clientCertificatePath: path("client.crt"), clientKeyPath: path("client.key"),
            indexPath: path(CertificateIndex.fileName), serverNames: serverNames)
        // Check every file before writing any, so a refusal leaves the directory as it was.
        try CertificateFiles.refuseOverwrite(result.files + [path(RevocationList.fileName)], force: force)
        try CertificateFiles.ensureDirectory(directory)

        let caKey = try PrivateKey.generateP256()
        let caProfile = Certificate.Profile(
            commonName: "memo CA", isCertificateAuthority: true, validity: caValidity)
        let caCert = try Certificate.issue(caProfile, key: caKey, issuer: nil)

        let serverKey = try PrivateKey.generateP256()
        let serverCert = try Certificate.issue(
            serverProfile(names: serverNames, validity: serverValidity), key: serverKey, issuer: (caCert, caKey))

        let clientKey = try PrivateKey.generateP256()
        let clientCert = try Certificate.issue(
            clientProfile(name: "client", role: .readWrite, validity: clientValidity), key: clientKey,
            issuer: (caCert, caKey))

        try write(caCert, caKey, certificatePath: result.caCertificatePath, keyPath: result.caKeyPath, force: force)
        try write(
            serverCert, serverKey, certificatePath: result.serverCertificatePath, keyPath: result.serverKeyPath,
            force: force)
        try write(
            clientCert, clientKey, certificatePath: result.clientCertificatePath, keyPath: result.clientKeyPath,
            force: force)
        // The old CA's list would not verify under the new CA, and its serials mean nothing any more.
        try CertificateFiles.remove(path(RevocationList.fileName))
        let index = CertificateIndex(
            entries: [.init(CertificateInfo(serverCert)), .init(CertificateInfo(clientCert))], source: .index)
        try index.save(directory: directory)
        return result
    }

    /// Issues `NAME.crt`/`NAME.key` in `directory`, signed by the CA in `caDirectory` (default: `directory`).
    ///
    /// The certificate's CN is `name`; its OU carries the role (see `CertificateRole`); extendedKeyUsage is
    /// clientAuth.
    /// - Parameters:
    ///   - name: letters, digits, "-", "_" and "." only; not "ca" or "server", whose files it would replace.
    ///   - force: replace an existing NAME.crt/NAME.key.
    public static func issueClient(
        name: String, directory: String, readOnly: Bool = false, force: Bool = false,
        validity: CertificateValidity = .clientDefault, caDirectory: String? = nil
    ) throws(TLSError) -> IssuedCertificate {
        try validateClientName(name)
        let role: CertificateRole = readOnly ? .readOnly : .readWrite
        let issued = IssuedCertificate(
            certificatePath: CertificateFiles.join(directory, name + ".crt"),
            keyPath: CertificateFiles.join(directory, name + ".key"), commonName: name, role: role)
        try CertificateFiles.refuseOverwrite([issued.certificatePath, issued.keyPath], force: force)

        let caFolder = caDirectory ?? directory
        let (caCert, caKey) = try loadAuthority(caFolder)

        try CertificateFiles.ensureDirectory(directory)
        let key = try PrivateKey.generateP256()
        let cert = try Certificate.issue(
            clientProfile(name: name, role: role, validity: validity), key: key, issuer: (caCert, caKey))
        try write(cert, key, certificatePath: issued.certificatePath, keyPath: issued.keyPath, force: force)
        try CertificateIndex.record(cert, directory: caFolder)
        return issued
    }

    // MARK: - Helpers

    /// The CA certificate and key in `directory`, checked to belong together.
    static func loadAuthority(_ directory: String) throws(TLSError) -> (Certificate, PrivateKey) {
        let caCert = try Certificate.load(path: CertificateFiles.join(directory, "ca.crt"))
        let caKey = try PrivateKey.load(path: CertificateFiles.join(directory, "ca.key"))
        TLSError.clearQueue()
        guard X509_check_private_key(caCert.pointer, caKey.pointer) == 1 else {
            throw TLSError.openSSL(
                "loading the CA from \(directory)", kind: .invalidArgument, detail: "ca.key does not match ca.crt")
        }
        return (caCert, caKey)
    }

    /// localhost, 127.0.0.1 and ::1, then each of `hosts` as a subjectAltName entry.
    static func serverNames(_ hosts: [String]) throws(TLSError) -> [String] {
        var names = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]
        for host in hosts {
            let entry = try subjectAltName(for: host)
            if !names.contains(entry) { names.append(entry) }
        }
        return names
    }

    static func serverProfile(names: [String], validity: CertificateValidity) -> Certificate.Profile {
        Certificate.Profile(
            commonName: "memo server", isCertificateAuthority: false, extendedKeyUsage: "serverAuth",
            subjectAltNames: names, validity: validity)
    }

    private static func clientProfile(
        name: String, role: CertificateRole, validity: CertificateValidity
    ) -> Certificate.Profile {
        Certificate.Profile(
            commonName: name, organizationalUnit: role.organizationalUnit, isCertificateAuthority: false,
            extendedKeyUsage: "clientAuth", validity: validity)
    }

    /// Writes the key first (mode 0600) so a certificate never exists without its key.
    static func write(
        _ certificate: Certificate, _ key: PrivateKey, certificatePath: String, keyPath: String, force: Bool
    ) throws(TLSError) {
        try CertificateFiles.write(key.pem(), to: keyPath, mode: CertificateFiles.keyMode, force: force)
        try CertificateFiles.write(
            certificate.pem(), to: certificatePath, mode: CertificateFiles.certificateMode, force: force)
    }

    static func validateClientName(_ name: String) throws(TLSError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        // A leading dot would allow "." and ".." (directory names) and hidden files; 64 is the CN limit.
        guard allowed, !name.isEmpty, name.utf8.count <= 64, !name.hasPrefix("."), name != "ca", name != "server"
        else {
            throw TLSError(
                kind: .invalidArgument, operation: "issuing a client certificate",
                detail: "invalid name \"\(name)\": use 1-64 letters, digits, '-', '_' or '.', not starting with "
                    + "'.', and not \"ca\" or \"server\"")
        }
    }

    /// "IP:addr" when `host` parses as an IPv4 or IPv6 address, else "DNS:host" after checking its characters.
    static func subjectAltName(for host: String) throws(TLSError) -> String {
        if ServerName.isIPAddress(host) { return "IP:" + host }
        let labelsOK = host.split(separator: ".", omittingEmptySubsequences: false).enumerated().allSatisfy {
            index, label in
            if index == 0, label == "*" { return true }
            return !label.isEmpty && label.count <= 63
                && label.utf8.allSatisfy { byte in
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                }
        }
        guard labelsOK, !host.isEmpty, host.utf8.count <= 253 else {
            throw TLSError(
                kind: .invalidArgument, operation: "adding a server name",
                detail: "\"\(host)\" is neither an IP address nor a DNS name")
        }
        return "DNS:" + host
    }
}
