#if canImport(Glibc)
import Glibc
#endif
import MemoTLS

/// The record of every certificate a memo CA issued, kept beside it as `ca.index`: what `certs list` shows
/// and what `certs revoke NAME` looks names up in.
///
/// One line per certificate, tab-separated: serial (hex), role (`server`, `read-write`, `read-only`), name,
/// notAfter and the revocation time (UTC, `2026-11-30T17:02:00Z`, or `-`). Lines starting with `#` are comments.
public struct CertificateIndex: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var serial: String
        public var role: String
        public var name: String
        /// Unix seconds.
        public var notAfter: Int64
        /// Unix seconds; nil while the certificate is not revoked.
        public var revokedAt: Int64?

        /// The entry for a certificate the CA just issued.
        init(_ info: CertificateInfo) {
            serial = info.serial
            role = info.isServerCertificate ? Self.serverRole : info.role.rawValue
            name = info.commonName
            notAfter = info.notAfter
            revokedAt = nil
        }

        init(serial: String, role: String, name: String, notAfter: Int64, revokedAt: Int64?) {
            self.serial = serial
            self.role = role
            self.name = name
            self.notAfter = notAfter
            self.revokedAt = revokedAt
        }

        /// The role written for server certificates.
        public static let serverRole = "server"
    }

    /// Where the entries came from.
    public enum Source: Sendable, Hashable {
        /// The index file.
        case index
        /// There was no index (a CA made before memo kept one): the entries are the certificates found as files
        /// in the CA's folder that the CA signed, so a certificate whose files were moved away is missing.
        case filesInDirectory
    }

    /// The name of the file beside `ca.crt`.
    public static let fileName = "ca.index"

    public var entries: [Entry]
    public let source: Source

    /// The serial of the certificate that superseded entry `position`, when a later one took its place: any later
    /// server certificate for a server certificate (the folder holds one server.crt), a later client certificate
    /// of the same name for a client one (`certs client NAME --force`). The superseded one stays valid until it
    /// expires or is revoked; this only says it is no longer the one in use.
    public func supersedingSerial(of position: Int) -> String? {
        let entry = entries[position]
        let isServer = entry.role == Entry.serverRole
        return entries[(position + 1)...].last { later in
            isServer ? later.role == Entry.serverRole : later.role != Entry.serverRole && later.name == entry.name
        }?.serial
    }

    /// The index beside the CA in `directory`, or, when there is none, what can be found in the folder.
    /// - Throws: `TLSError` for an index that cannot be read or parsed, or a missing CA.
    public static func load(directory: String) throws(TLSError) -> CertificateIndex {
        let path = CertificateFiles.join(directory, fileName)
        if CertificateFiles.exists(path) {
            return CertificateIndex(entries: try parse(try CertificateFiles.read(path), path: path), source: .index)
        }
        return CertificateIndex(entries: try reconstruct(directory: directory), source: .filesInDirectory)
    }

    /// Writes the index beside the CA in `directory` (replacing it in one rename).
    func save(directory: String) throws(TLSError) {
        var text = "# memo CA index: serial, role, name, not after (UTC), revoked (UTC or -)\n"
        for entry in entries {
            let revoked = entry.revokedAt.map(UTCTime.format) ?? "-"
            text += "\(entry.serial)\t\(entry.role)\t\(entry.name)\t\(UTCTime.format(entry.notAfter))\t\(revoked)\n"
        }
        try CertificateFiles.replace(
            Array(text.utf8), at: CertificateFiles.join(directory, Self.fileName), mode: CertificateFiles.keyMode)
    }

    /// Adds the certificate just issued to the index beside the CA in `directory`.
    static func record(_ certificate: Certificate, directory: String) throws(TLSError) {
        var index = try load(directory: directory)
        let entry = Entry(CertificateInfo(certificate))
        // Without an index yet, the entries were read from the folder, which already holds the new file.
        if !index.entries.contains(where: { $0.serial == entry.serial }) { index.entries.append(entry) }
        try index.save(directory: directory)
    }

    private static func parse(_ bytes: [UInt8], path: String) throws(TLSError) -> [Entry] {
        var entries: [Entry] = []
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (number, line) in lines.enumerated() where !line.isEmpty && line.first != UInt8(ascii: "#") {
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 5, let serial = CertificateSerial.normalized(fields[0]),
                let notAfter = UTCTime.parse(fields[3]), fields[4] == "-" || UTCTime.parse(fields[4]) != nil
            else {
                throw TLSError(
                    kind: .invalidArgument, operation: "reading \(path)",
                    detail: "line \(number + 1) is not serial, role, name, not-after and revoked separated by tabs")
            }
            entries.append(Entry(
                serial: serial, role: fields[1], name: fields[2], notAfter: notAfter,
                revokedAt: UTCTime.parse(fields[4])))
        }
        return entries
    }

    /// The certificates in `directory` that its CA signed, marked revoked when its CRL lists them.
    private static func reconstruct(directory: String) throws(TLSError) -> [Entry] {
        let caPath = CertificateFiles.join(directory, "ca.crt")
        let ca = try Certificate.load(path: caPath)
        let crlPath = CertificateFiles.join(directory, RevocationList.fileName)
        var revoked: [String: Int64] = [:]
        if CertificateFiles.exists(crlPath) {
            for entry in try RevocationList.load(path: crlPath, caCertificatePath: caPath).entries {
                revoked[entry.serial] = entry.revokedAt
            }
        }
        var entries: [Entry] = []
        for name in CertificateFiles.names(in: directory) where name.hasSuffix(".crt") && name != "ca.crt" {
            guard let certificate = try? Certificate.load(path: CertificateFiles.join(directory, name)),
                certificate.isSigned(by: ca)
            else { continue }
            var entry = Entry(CertificateInfo(certificate))
            entry.revokedAt = revoked[entry.serial]
            entries.append(entry)
        }
        return entries.sorted { ($0.name, $0.serial) < ($1.name, $1.serial) }
    }
}
