import MemoNet
import MemoTLS

/// How to run a server.
public struct ServerConfiguration: Sendable {
    /// `HOST:PORT` to listen on; port 0 picks a free one.
    public var listen = "127.0.0.1:7420"
    /// The folder holding `ca.crt`, `server.crt` and `server.key`.
    public var certsDirectory = "certs"
    /// Whether clients must present a certificate signed by the CA (mutual TLS).
    public var requireClientCertificate = true
    /// Event-loop threads: by default one per CPU the process may run on (its affinity mask), so that a server
    /// confined to one core does not pay two loops' contention for it.
    public var threads = AvailableCPUs.defaultLoopCount
    public var limits = ServerLimits()
    /// The name sent in `welcome`.
    public var serverName = "memo-server"
    /// Who protects TLS 1.3 records after the handshake: our record layer (`--tls-records own`, the default) or
    /// OpenSSL's (`--tls-records openssl`), the fallback if a problem is ever found in ours.
    public var tlsRecords = TLSRecordLayerChoice.handOff
    /// The lifetime of the TLS 1.3 session ticket sent with the answer to hello, in seconds; nil sends none (README.md,
    /// "TLS session resumption").
    public var sessionTicketLifetime: Int? = TLSConfiguration.defaultSessionTicketLifetime
    /// `HOST:PORT` for the plain-HTTP `/metrics`, `/healthz` and `/readyz` (`--metrics`); nil: none (the default).
    public var metrics: String?

    public init(listen: String = "127.0.0.1:7420", certsDirectory: String = "certs") {
        self.listen = listen
        self.certsDirectory = certsDirectory
    }
}
