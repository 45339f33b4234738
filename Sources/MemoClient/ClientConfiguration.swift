import Foundation
import MemoNet
import MemoTLS

/// Where and how a client connects.
public struct ClientConfiguration: Sendable {
    /// `HOST:PORT` (`[V6]:PORT` for IPv6), or several separated by commas: servers over one database, tried in
    /// turn (revisions are global, so a subscription resumes on any of them).
    public var server: String
    /// PEM file of the CA that signed the server's certificate.
    public var caPath: String
    /// PEM files of our client certificate and its key.
    public var certificatePath: String
    public var keyPath: String
    /// How long a request may wait for its answer, connecting and retries included.
    public var requestTimeout: Duration
    /// How long one connection attempt (TCP, TLS and hello) may take.
    public var connectTimeout: Duration
    /// Sent in `hello`, for the server's logs.
    public var clientName: String
    public var reconnect: ReconnectPolicy
    /// How long a connection may stay silent before the client pings it (`--keepalive`); nil: never. A ping not
    /// answered within `keepaliveTimeout` ends the connection as lost, so that a server that stopped answering
    /// (a stopped process keeps its TCP connection up) is left for the next address. Any frame received
    /// counts as an answer, so a busy connection is never pinged.
    public var keepalive: Duration? = Self.defaultKeepalive
    /// Who protects TLS 1.3 records after the handshake (`MEMO_TLS_RECORDS=own|openssl` for memo-client).
    public var tlsRecords = TLSRecordLayerChoice.handOff
    /// The folder where TLS 1.3 sessions are saved and offered again on the next connection (`TLSSessionCache`);
    /// nil: every connection makes a full handshake. With a folder the records stay with OpenSSL, which reads the
    /// server's ticket (`tlsRecords` is not used). memo-client sets `$XDG_CACHE_HOME/memo` unless
    /// `MEMO_TLS_RESUME=0`.
    public var tlsSessionCache: String?
    /// Where the certificate files were looked for and why there (for an error about missing files), such as
    /// "certificate folder ./certs (found in the current directory)"; nil when the caller gave the files.
    public var certificatesOrigin: String?

    /// The keepalive interval when none is given: 3 s.
    public static let defaultKeepalive: Duration = .seconds(3)

    /// How long a keepalive ping may go unanswered: one more keepalive interval.
    public var keepaliveTimeout: Duration { keepalive ?? Self.defaultKeepalive }

    /// The port a server address without one stands for.
    public static let defaultPort: UInt16 = 7420

    public init(
        server: String, caPath: String, certificatePath: String, keyPath: String,
        requestTimeout: Duration = .seconds(10), connectTimeout: Duration? = nil, clientName: String = "memo-client",
        reconnect: ReconnectPolicy = ReconnectPolicy()
    ) {
        self.server = server
        self.caPath = caPath
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout ?? requestTimeout
        self.clientName = clientName
        self.reconnect = reconnect
    }

    /// `ca.crt`, `client.crt` and `client.key` in `directory`.
    public init(server: String, certificatesDirectory directory: String) {
        let join = { (name: String) in directory.hasSuffix("/") ? directory + name : directory + "/" + name }
        self.init(
            server: server, caPath: join("ca.crt"), certificatePath: join("client.crt"), keyPath: join("client.key"))
    }

    /// Chooses the record layer by its operator name, `own` or `openssl`. - Returns: false for another name.
    public mutating func useTLSRecords(named name: String) -> Bool {
        guard let choice = TLSRecordLayerChoice(name: name) else { return false }
        tlsRecords = choice
        return true
    }

    /// The addresses in `server`, in the order they are tried.
    var servers: [String] {
        let list = server.split(separator: ",").map(Self.trimmingWhitespace).filter { !$0.isEmpty }
        return list.isEmpty ? [server] : list
    }

    /// `part` without the blanks around it: tabs and Unicode's space separators (`CharacterSet.whitespaces`), in
    /// the standard library: Foundation's `trimmingCharacters(in:)` bridges through NSString, about 0.7 million
    /// instructions for one address, a sixth of what a one-request command's own code does.
    static func trimmingWhitespace(_ part: Substring) -> String {
        func isBlank(_ scalar: Unicode.Scalar) -> Bool {
            scalar == " " || scalar == "\t"
                || (scalar.value >= 0x80 && scalar.properties.generalCategory == .spaceSeparator)
        }
        let scalars = part.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
            let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    /// The host part of one address of `server`, used to check the server's certificate.
    static func host(of server: String) -> String {
        // An address that does not parse fails when connecting, with the reason; here it is only a name to check.
        (try? HostPort(parsing: server, defaultPort: defaultPort))?.host ?? server
    }

    /// Which certificate folder a client uses: `option` (`--certs`), else `$MEMO_CERTS`, else `./certs` when it
    /// exists, else `$XDG_CONFIG_HOME/memo/certs` (`~/.config/memo/certs`). A folder relative to wherever the
    /// command happens to run would make the same command work in one directory and not in the next.
    /// - Returns: the folder and, in words, why it is that one.
    public static func certificatesDirectory(
        option: String?, environment: [String: String], isDirectory: (String) -> Bool
    ) -> (path: String, origin: String) {
        if let option { return (option, "certificate folder \(option) (--certs)") }
        if let folder = environment["MEMO_CERTS"], !folder.isEmpty {
            return (folder, "certificate folder \(folder) (MEMO_CERTS)")
        }
        if isDirectory("certs") { return ("certs", "certificate folder ./certs (found in the current directory)") }
        let folder = configDirectory(environment: environment) + "/memo/certs"
        return (folder, "certificate folder \(folder) (the default: no ./certs here and MEMO_CERTS is not set)")
    }
}

extension ClientConfiguration {
    /// `$XDG_CONFIG_HOME` when it is an absolute path, else `~/.config`: where the `memo` folder of certificates and
    /// the config file of contexts are.
    public static func configDirectory(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
        return (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "~") + "/.config"
    }
}

/// Exponential backoff with jitter between reconnect attempts.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The delay before the second attempt; the first after a lost connection is immediate.
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var multiplier: Double
    /// How long a connection must stay up before its loss starts the backoff again from the beginning. A
    /// handshake that succeeds is not enough: a server that welcomes and then fails would otherwise be
    /// reconnected to in a tight loop.
    public var healthyAfter: Duration
    /// The least wait after TLS failed or the certificate was refused: retrying sooner would not help, and would
    /// fill the server's log with the same refusal.
    public var refusedDelay: Duration

    public init(
        initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(3), multiplier: Double = 2,
        healthyAfter: Duration = .seconds(5), refusedDelay: Duration = .seconds(30)
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.healthyAfter = healthyAfter
        self.refusedDelay = refusedDelay
    }

    /// The wait before attempt `failures + 1` after `failures` failed ones: the backoff, times a random factor
    /// in [0.5, 1] so that many clients dropped at once do not come back in step.
    public func delay(afterFailures failures: Int, random: Double = Double.random(in: 0.5...1)) -> Duration {
        guard failures > 0 else { return .zero }
        let base = initialDelay.seconds * pow(multiplier, Double(failures - 1))
        return .seconds(min(base, maximumDelay.seconds) * random)
    }
}

/// Where a client's connection stands.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// The first connection is being made.
    case connecting
    /// Connected; requests and the subscription flow.
    case live
    /// The connection was lost (or the server went away) and a new one is being made.
    case reconnecting
    /// Not connected and not trying right now: waiting before the next attempt, refused, or closed.
    case offline

    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .live: return "live"
        case .reconnecting: return "reconnecting"
        case .offline: return "offline"
        }
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Seconds as people write them, to a tenth: `10`, `0.5` (a deadline's remainder, 1.9724968 s, says `2`).
    var secondsText: String {
        let tenths = (seconds * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? String(Int(tenths / 10)) : String(tenths / 10)
    }
}
