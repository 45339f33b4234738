import MemoTLS

/// A server certificate written by `CertificateAuthority.issueServer`.
public struct IssuedServerCertificate: Sendable, Hashable {
    public let certificatePath: String
    public let keyPath: String
    public let serial: String
    /// The subjectAltName entries, e.g. "DNS:localhost", "IP:127.0.0.1".
    public let serverNames: [String]
}

/// What `CertificateAuthority.revoke` did.
public struct RevocationOutcome: Sendable, Hashable {
    /// Certificates revoked now.
    public let revoked: [CertificateIndex.Entry]
    /// Certificates that matched but were revoked before.
    public let alreadyRevoked: [CertificateIndex.Entry]
    /// Set when a serial that the index does not know was revoked (a certificate issued before the index).
    public let unknownSerial: String?
    /// The revocation list written (or left as it was when nothing new was revoked).
    public let listPath: String
    /// How many serials the list holds.
    public let listCount: Int
}

extension CertificateAuthority {
    /// Re-issues `server.crt`/`server.key` in `directory` from the CA there: a new key, localhost, 127.0.0.1,
    /// ::1 and each of `hosts`. Client certificates stay valid; a running server takes it on SIGHUP.
    ///
    /// Both files are replaced in one rename each (key first), so a server reloading meanwhile either loads
    /// the old pair or fails its reload on a mismatch and keeps what it had.
    public static func issueServer(
        directory: String, hosts: [String], validity: CertificateValidity = .leafDefault
    ) throws(TLSError) -> IssuedServerCertificate {
        let names = try serverNames(hosts)
        let (caCert, caKey) = try loadAuthority(directory)
        let key = try PrivateKey.generateP256()
        let cert = try Certificate.issue(
            serverProfile(names: names, validity: validity), key: key, issuer: (caCert, caKey))
        let certificatePath = CertificateFiles.join(directory, "server.crt")
        let keyPath = CertificateFiles.join(directory, "server.key")
        try CertificateFiles.replace(key.pem(), at: keyPath, mode: CertificateFiles.keyMode)
        try CertificateFiles.replace(cert.pem(), at: certificatePath, mode: CertificateFiles.certificateMode)
        try CertificateIndex.record(cert, directory: directory)
        return IssuedServerCertificate(
            certificatePath: certificatePath, keyPath: keyPath, serial: CertificateInfo(cert).serial,
            serverNames: names)
    }

    /// Revokes the client certificates named `target` (every one not yet revoked: a name re-issued with
    /// `--force` has several), or the one whose serial is `target`, and writes `ca.crl` signed by the CA.
    ///
    /// A serial the index does not know (a certificate issued before the index existed) is revoked when it
    /// has at least 16 hex digits (memo serials have 32), so that a mistyped name is not taken for one.
    /// - Throws: `TLSError.invalidArgument` when nothing matches or `target` is the server's certificate.
    public static func revoke(
        _ target: String, directory: String, now: Int64 = UTCTime.now()
    ) throws(TLSError) -> RevocationOutcome {
        let operation = "revoking \(target)"
        let caPath = CertificateFiles.join(directory, "ca.crt")
        let listPath = CertificateFiles.join(directory, RevocationList.fileName)
        let (caCert, caKey) = try loadAuthority(directory)
        var index = try CertificateIndex.load(directory: directory)
        let previous = CertificateFiles.exists(listPath)
            ? try RevocationList.load(path: listPath, caCertificatePath: caPath) : nil

        // Names are compared as bytes, as everything that decides identity is.
        var matches = index.entries.indices.filter { Array(index.entries[$0].name.utf8) == Array(target.utf8) }
        let serial = CertificateSerial.normalized(target)
        if matches.isEmpty, let serial {
            matches = index.entries.indices.filter { index.entries[$0].serial == serial }
        }
        if matches.contains(where: { index.entries[$0].role == CertificateIndex.Entry.serverRole }) {
            throw TLSError(
                kind: .invalidArgument, operation: operation,
                detail: "that is the server's certificate; replace it with `memo-server certs server` instead")
        }
        var unknownSerial: String?
        if matches.isEmpty {
            guard let serial, serial.count >= 16 else {
                throw TLSError(
                    kind: .invalidArgument, operation: operation,
                    detail: "no certificate named \(target) in \(index.sourceDescription(directory)), "
                        + "and it is not a serial number (`memo-server certs list` shows both)")
            }
            unknownSerial = serial
        }

        var revoked: [CertificateIndex.Entry] = []
        var already: [CertificateIndex.Entry] = []
        for position in matches {
            if index.entries[position].revokedAt != nil {
                already.append(index.entries[position])
            } else {
                index.entries[position].revokedAt = now
                revoked.append(index.entries[position])
            }
        }
        // The new list keeps every serial of the old one, so that nothing is ever un-revoked by accident.
        var entries = previous?.entries ?? []
        var listed = Set(entries.map(\.serial))
        let additions = index.entries.compactMap { entry in
            entry.revokedAt.map { RevocationList.Entry(serial: entry.serial, revokedAt: $0) }
        } + (unknownSerial.map { [RevocationList.Entry(serial: $0, revokedAt: now)] } ?? [])
        for entry in additions where listed.insert(entry.serial).inserted { entries.append(entry) }

        if entries.count != previous?.entries.count {
            try RevocationList.write(
                entries, number: (previous?.number ?? 0) + 1, to: listPath, ca: caCert, key: caKey)
        }
        try index.save(directory: directory)
        return RevocationOutcome(
            revoked: revoked, alreadyRevoked: already, unknownSerial: unknownSerial, listPath: listPath,
            listCount: entries.count)
    }
}

extension CertificateIndex {
    /// Where the entries came from, for messages.
    func sourceDescription(_ directory: String) -> String {
        switch source {
        case .index: return CertificateFiles.join(directory, Self.fileName)
        case .filesInDirectory: return "the certificates in \(directory) (there is no \(Self.fileName) yet)"
        }
    }
}
