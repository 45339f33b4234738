import Foundation
import MemoClient
import MemoTLS

/// The certificate memo-client would present (`whoami`), and the warning every command gives, at most once a day,
/// when it expires within 30 days.
public struct ClientCertificate: Sendable {
    /// Warn this long before notAfter.
    public static let warningSeconds: Int64 = 30 * 86_400

    public let path: String
    public let info: CertificateInfo

    /// Reads the certificate the configuration names (`--cert`, `MEMO_CERT` or the certificates folder's).
    /// - Throws: `TLSError` when it is missing or not a certificate.
    public init(configuration: ClientConfiguration) throws(TLSError) {
        path = configuration.certificatePath
        info = try CertificateInfo(path: path)
    }

    /// The role the server gives it: read-only when the certificate says so, read-write otherwise.
    public var role: String { info.role == .readOnly ? "read-only" : "read-write" }

    /// Whole days until notAfter (negative once expired).
    public func daysLeft(now: Int64) -> Int64 {
        let left = info.secondsLeft(now: now)
        return left >= 0 ? left / 86_400 : -((-left + 86_399) / 86_400)
    }

    /// The warning when the certificate expires within 30 days or has expired; nil otherwise.
    public func warning(now: Int64) -> String? {
        let left = info.secondsLeft(now: now)
        guard left < Self.warningSeconds else { return nil }
        let when = UTCTime.format(info.notAfter)
        let remedy = "ask the server's operator for a new one (memo-server certs client \(info.commonName) --force)"
        if left <= 0 {
            return "warning: the client certificate \(path) (\(info.commonName)) expired at \(when); \(remedy)"
        }
        return "warning: the client certificate \(path) (\(info.commonName)) expires at \(when), "
            + "in \(daysLeft(now: now)) days; \(remedy)"
    }

    /// `whoami`'s table: one `field<TAB>value` line per field (aligned on a terminal by the caller's style).
    public func fields(now: Int64) -> [(String, String)] {
        [
            ("name", info.commonName), ("role", role), ("serial", info.serial), ("issuer", info.issuerCommonName),
            ("notBefore", UTCTime.format(info.notBefore)), ("notAfter", UTCTime.format(info.notAfter)),
            ("daysLeft", String(daysLeft(now: now))), ("certificate", path),
        ]
    }

    /// `whoami --json`: one object with the fields above (`daysLeft` a number) and `warning` (a string or null).
    public func json(now: Int64) -> String {
        var text = "{"
        for (index, (key, value)) in fields(now: now).enumerated() {
            if index > 0 { text += "," }
            MemoJSON.appendString(key, to: &text)
            text += ":"
            if key == "daysLeft" { text += value } else { MemoJSON.appendString(value, to: &text) }
        }
        text += ",\"warning\":"
        if let warning = warning(now: now) { MemoJSON.appendString(warning, to: &text) } else { text += "null" }
        return text + "}"
    }

    /// The file that remembers the day of the last warning for each certificate: `$XDG_CACHE_HOME/memo/`
    /// (default `~/.cache/memo/`) `certificate-warnings`, one `SERIAL<TAB>YYYY-MM-DD` line per certificate.
    public static func warningsPath(environment: [String: String]) -> String {
        let mirror = MirrorCache.defaultPath(server: "x", environment: environment)
        return (mirror as NSString).deletingLastPathComponent + "/certificate-warnings"
    }

    /// The warning when it is due: the certificate expires within 30 days and no warning for it was given today
    /// (UTC) according to the file at `path`, which is then updated. A file that cannot be read or written
    /// never stops a command: the warning is then given every time.
    public func dailyWarning(now: Int64, path: String) -> String? {
        guard let warning = warning(now: now) else { return nil }
        let today = String(UTCTime.format(now).prefix(10))
        let old = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var lines = old.split(separator: "\n").map(String.init)
        let mine = info.serial + "\t"
        if lines.contains(mine + today) { return nil }
        lines.removeAll { $0.hasPrefix(mine) }
        lines.append(mine + today)
        let url = URL(fileURLWithPath: path)
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try? Data((lines.suffix(64).joined(separator: "\n") + "\n").utf8).write(to: url, options: .atomic)
        return warning
    }
}
