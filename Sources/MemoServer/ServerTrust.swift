import Foundation
import MemoTLS
import Synchronization

/// The certificates a server serves with, loaded together from its certificate folder: `server.crt`,
/// `server.key`, `ca.crt` and, when present, `ca.crl`. A reload loads a whole new set or nothing.
struct TrustMaterial: Sendable {
    let context: TLSContext
    let server: CertificateInfo
    let authority: CertificateInfo
    /// The revocation list, nil when the folder has none.
    let revocationList: RevocationList?
    /// Serials on the revocation list.
    let revoked: Set<String>

    /// A server certificate this close to its notAfter draws a warning.
    static let expiryWarning: Int64 = 30 * 86_400

    /// Loads every file now, so that a bad one fails here (at start, or a reload that keeps the old set).
    /// - Parameter settings: everything but the files (role, client certificates required, record layer...).
    static func load(directory: String, settings: TLSConfiguration) throws(TLSError) -> TrustMaterial {
        let path = { (name: String) in (directory as NSString).appendingPathComponent(name) }
        let listPath = path(RevocationList.fileName)
        let list = FileManager.default.fileExists(atPath: listPath)
            ? try RevocationList.load(path: listPath, caCertificatePath: path("ca.crt")) : nil
        var configuration = settings
        configuration.certificateChainPath = path("server.crt")
        configuration.privateKeyPath = path("server.key")
        configuration.trustedCAPath = path("ca.crt")
        configuration.revocationListPath = list == nil ? nil : listPath
        return TrustMaterial(
            context: try TLSContext(configuration), server: try CertificateInfo(path: path("server.crt")),
            authority: try CertificateInfo(path: path("ca.crt")), revocationList: list, revoked: list?.serials ?? [])
    }

    /// One line saying what was loaded.
    var summary: String {
        let names = server.subjectAltNames.map { ", names \($0)" } ?? ""
        var text = "server.crt (serial \(server.serial)\(names), expires \(UTCTime.format(server.notAfter))), "
            + "ca.crt (\(authority.commonName), expires \(UTCTime.format(authority.notAfter))), "
        if let revocationList {
            text += "\(RevocationList.fileName) (number \(revocationList.number), \(revoked.count) revoked)"
        } else {
            text += "no \(RevocationList.fileName) (no certificate revoked)"
        }
        return text
    }

    /// Warnings for the server certificate and the CA when they expire within 30 days (or have expired).
    func expiryWarnings(now: Int64 = UTCTime.now()) -> [String] {
        let remedies = [
            ("server certificate server.crt", server, "re-issue it with `memo-server certs server` and send SIGHUP"),
            ("CA certificate ca.crt", authority,
             "only a new CA helps (`memo-server certs init --force`; every certificate must then be re-issued)"),
        ]
        return remedies.compactMap { name, info, remedy in
            let left = info.secondsLeft(now: now)
            guard left < Self.expiryWarning else { return nil }
            let when = UTCTime.format(info.notAfter)
            if left <= 0 { return "warning: the \(name) expired at \(when); clients refuse it; \(remedy)" }
            return "warning: the \(name) expires at \(when), in \(left / 86_400) days; \(remedy)"
        }
    }
}

/// The trust a server's new handshakes use, swapped whole by a reload while connections keep running.
final class TrustStore: Sendable {
    /// The certificate folder as an absolute path.
    let directory: String
    /// The TLS settings other than the files, kept for every reload.
    let settings: TLSConfiguration
    private let material: Mutex<TrustMaterial>

    init(directory: String, settings: TLSConfiguration) throws(TLSError) {
        self.directory = directory
        self.settings = settings
        material = Mutex(try TrustMaterial.load(directory: directory, settings: settings))
    }

    var current: TrustMaterial { material.withLock { $0 } }

    /// The TLS context for a new connection.
    var context: TLSContext { material.withLock { $0.context } }

    /// Loads the folder again; on success new handshakes use it. - Returns: what was loaded.
    func reload() throws(TLSError) -> TrustMaterial {
        let loaded = try TrustMaterial.load(directory: directory, settings: settings)
        material.withLock { $0 = loaded }
        return loaded
    }

    /// Whether the loaded revocation list names `serial`.
    func isRevoked(_ serial: String?) -> Bool {
        guard let serial else { return false }
        return material.withLock { $0.revoked.contains(serial) }
    }
}

/// `path` made absolute against the current directory, for log lines an operator can act on.
public func absolutePath(_ path: String) -> String {
    let full = path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString)
        .appendingPathComponent(path)
    return (full as NSString).standardizingPath
}
