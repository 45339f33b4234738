internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A TLS protocol version.
public enum TLSVersion: Sendable, Hashable, CaseIterable {
    case tls1_0, tls1_1, tls1_2, tls1_3

    var openSSLValue: Int32 {
        switch self {
        case .tls1_0: return TLS1_VERSION
        case .tls1_1: return TLS1_1_VERSION
        case .tls1_2: return TLS1_2_VERSION
        case .tls1_3: return TLS1_3_VERSION
        }
    }
}

/// Who protects a session's records after a TLS 1.3 handshake.
public enum TLSRecordLayerChoice: Sendable, Hashable {
    /// The engine frees OpenSSL's `SSL` and seals and opens records itself with the negotiated AEAD
    /// (`TLSRecordLayer`): a few hundred bytes per idle session instead of ~25 KB, and fewer copies per record.
    /// TLS 1.2 sessions stay with OpenSSL.
    case handOff
    /// OpenSSL's `SSL` carries the whole session (for comparison in tests and benchmarks).
    case openSSL
}

/// Everything needed to build a `TLSContext`: role, files and protocol limits.
public struct TLSConfiguration: Sendable, Hashable {
    public enum Role: Sendable, Hashable {
        case server, client
    }

    public var role: Role
    /// PEM file with our certificate first, then any intermediates. Required for a server.
    public var certificateChainPath: String?
    /// PEM file with the private key matching the certificate.
    public var privateKeyPath: String?
    /// PEM file with the CA(s) that sign the peer: clients for a server, the server for a client.
    public var trustedCAPath: String?
    /// Server only: refuse clients without a certificate (SSL_VERIFY_FAIL_IF_NO_PEER_CERT). With false a
    /// certificate is still requested and, if sent, verified.
    public var requireClientCertificate: Bool
    public var minimumVersion: TLSVersion
    /// nil allows up to the newest OpenSSL supports (TLS 1.3).
    public var maximumVersion: TLSVersion?
    /// OpenSSL security level; nil keeps the system default. Level 0 is needed for a TLS 1.1 test client.
    public var securityLevel: Int?
    /// Who protects records once a TLS 1.3 handshake is over; see `TLSRecordLayerChoice`.
    public var recordLayer: TLSRecordLayerChoice
    /// TLS 1.3 cipher suites in OpenSSL's syntax, in order of preference; nil keeps the default (a server
    /// prefers AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305).
    public var cipherSuites: String?
    /// Server only: a PEM CRL signed by the trusted CA; client certificates it lists are refused with the
    /// certificate_revoked alert. nil checks no list.
    public var revocationListPath: String?
    /// Server only: how long the TLS 1.3 session ticket sent after each handshake stays good, in seconds; nil
    /// sends none. A client that offers a ticket in time resumes without either side's certificate signature;
    /// the client certificate the ticket carries is verified again at resumption (CA, dates, revocation list
    /// of the moment). See `TLSContext.ticketKeys`.
    public var sessionTicketLifetime: Int? = TLSConfiguration.defaultSessionTicketLifetime
    /// Client only: read the certificate, key and trusted CA files when a handshake first needs them instead of
    /// when the context is made. A resumed TLS 1.3 handshake needs none of them (no certificate is asked for or
    /// sent), so a client that offers a saved session and resumes never parses them: about 4.6 million
    /// instructions of a `memo-client` command (BENCHMARKS.md, "Lazy TLS material on the client"). The files are
    /// still checked when the context is made: each must exist (the same error as without) and open as a regular
    /// file, or everything is loaded at once, so that an unreadable one fails at start with the usual error. Only
    /// their contents are read late: a file that exists but does not parse (or a key that does not match) fails the
    /// first full handshake instead, with the error loading it at start gives (`TLSEngine.handshake` throws it).
    /// Ignored (everything loaded now) for a server or with a `revocationListPath`.
    public var deferClientMaterial = false

    /// An hour: a script run every few minutes resumes, and a ticket stolen from a client's cache is good for
    /// little longer than that (the certificate itself is checked at each resumption).
    public static let defaultSessionTicketLifetime = 3600

    public init(
        role: Role, certificateChainPath: String? = nil, privateKeyPath: String? = nil, trustedCAPath: String? = nil,
        requireClientCertificate: Bool = true, minimumVersion: TLSVersion = .tls1_2,
        maximumVersion: TLSVersion? = nil, securityLevel: Int? = nil, recordLayer: TLSRecordLayerChoice = .handOff,
        cipherSuites: String? = nil
    ) {
        self.role = role
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.trustedCAPath = trustedCAPath
        self.requireClientCertificate = requireClientCertificate
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.securityLevel = securityLevel
        self.recordLayer = recordLayer
        self.cipherSuites = cipherSuites
    }

    /// A server that presents `certificateChainPath` and verifies clients against `trustedCAPath`.
    public static func server(
        certificateChainPath: String, privateKeyPath: String, trustedCAPath: String,
        requireClientCertificate: Bool = true
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .server, certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath,
            trustedCAPath: trustedCAPath, requireClientCertificate: requireClientCertificate)
    }

    /// A client that verifies the server against `trustedCAPath` and optionally presents a certificate.
    public static func client(
        trustedCAPath: String, certificateChainPath: String? = nil, privateKeyPath: String? = nil
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .client, certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath,
            trustedCAPath: trustedCAPath)
    }
}

/// Owns one `SSL_CTX`: the shared settings, certificates and trust store from which `TLSEngine`s are made.
///
/// `@unchecked Sendable` because the context is never changed after `init` returns, and OpenSSL locks an
/// `SSL_CTX` internally for what `SSL_new` and the handshake do with it (reference counts, the X509 store),
/// so engines on different threads may share it.
public final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer
    public let configuration: TLSConfiguration
    /// The files a client loads when a handshake first needs them (`TLSConfiguration.deferClientMaterial`); nil
    /// when everything was loaded in `init`. Freed after the context, whose callbacks use it. Set only in `init`.
    private(set) var lazy: UnsafeMutablePointer<CMemoSSL_LazyClient>?

    public var isServer: Bool { configuration.role == .server }

    /// Builds the context, loading every file now so that a bad path fails at startup, not per connection.
    /// - Throws: `TLSError` (`.fileSystem` for a missing file, `.openSSL` for a bad one, `.invalidArgument`).
    public init(_ configuration: TLSConfiguration) throws(TLSError) {
        self.configuration = configuration
        lazy = nil
        let isServer = configuration.role == .server
        let operation = isServer ? "setting up the TLS server" : "setting up the TLS client"
        TLSError.clearQueue()
        guard let ctx = SSL_CTX_new(isServer ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.openSSL(operation)
        }
        pointer = ctx  // from here on deinit frees it, also when init throws below

        if let level = configuration.securityLevel { SSL_CTX_set_security_level(ctx, Int32(level)) }
        guard CMemoSSL_CTX_set_min_proto_version(ctx, configuration.minimumVersion.openSSLValue) == 1,
            CMemoSSL_CTX_set_max_proto_version(ctx, configuration.maximumVersion?.openSSLValue ?? 0) == 1
        else { throw TLSError.openSSL(operation, detail: "protocol version limits") }

        // A hand-off needs the TLS 1.3 traffic secrets, which OpenSSL gives only to a key log callback.
        if configuration.recordLayer == .handOff { CMemoSSL_CTX_capture_traffic_secrets(ctx) }
        // Partial writes and moving buffers let an engine write large plaintext in pieces; RELEASE_BUFFERS
        // frees OpenSSL's record buffers between records, which matters with many idle connections.
        let mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS
        _ = CMemoSSL_CTX_set_mode(ctx, Int(mode))
        var options = CMemoSSL_OP_NO_COMPRESSION() | CMemoSSL_OP_NO_RENEGOTIATION()
        if isServer { options |= CMemoSSL_OP_CIPHER_SERVER_PREFERENCE() }
        _ = SSL_CTX_set_options(ctx, options)

        if isServer {
            // No server-side session cache: resumption is by stateless TLS 1.3 tickets only (one per handshake,
            // sealed with the process's ticket keys), so a server holds nothing per client that may come back.
            // Each resumption re-verifies the client certificate the ticket carries against this context's
            // store (CMemoSSL_check_ticket): a revoked or expired certificate gets a full handshake, which
            // refuses it.
            _ = CMemoSSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
            _ = SSL_CTX_set_session_id_context(ctx, "memo", 4)
            if let lifetime = configuration.sessionTicketLifetime, lifetime > 0 {
                _ = SSL_CTX_set_num_tickets(ctx, 1)
                _ = SSL_CTX_set_timeout(ctx, Int(lifetime))
                guard var keys = Self.ticketKeys, CMemoSSL_CTX_set_ticket_keys(ctx, &keys, keys.count) == 1,
                    CMemoSSL_CTX_check_tickets_at_resumption(ctx) == 1
                else { throw TLSError.openSSL(operation, detail: "session tickets") }
                OPENSSL_cleanse(&keys, keys.count)
            } else {
                _ = SSL_CTX_set_num_tickets(ctx, 0)
                _ = SSL_CTX_set_options(ctx, CMemoSSL_OP_NO_TICKET())
            }
        }
        if configuration.minimumVersion == .tls1_2 || configuration.minimumVersion == .tls1_3 {
            // TLS 1.2 offers only forward-secret AEAD suites, as TLS 1.3 does: ECDHE with AES-GCM or
            // ChaCha20-Poly1305, no CBC (OpenSSL's default list keeps CBC suites with their padding-oracle history).
            // Contexts that allow older versions (test clients of TLS 1.0/1.1) keep the default list, or they
            // would have no suite at all and fail before the server could refuse their version.
            TLSError.clearQueue()
            guard SSL_CTX_set_cipher_list(ctx, Self.tls12Ciphers) == 1 else {
                throw TLSError.openSSL("setting the TLS 1.2 cipher list", detail: Self.tls12Ciphers)
            }
        }
        if isServer || configuration.cipherSuites != nil {
            // A server puts AES-128-GCM first: as strong as a memo service needs and cheaper per record than
            // AES-256, which counts when one change goes out as a record to every subscriber.
            let suites =
                configuration.cipherSuites
                ?? "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
            TLSError.clearQueue()
            guard SSL_CTX_set_ciphersuites(ctx, suites) == 1 else {
                throw TLSError.openSSL("setting the TLS 1.3 cipher suites", detail: suites)
            }
        }

        if !isServer, configuration.deferClientMaterial, configuration.revocationListPath == nil,
            configuration.trustedCAPath != nil, configuration.certificateChainPath == nil || configuration.privateKeyPath != nil
        {
            let paths = [configuration.certificateChainPath, configuration.privateKeyPath, configuration.trustedCAPath]
            for case let path? in paths { try Self.requireFile(path, operation) }
            if paths.allSatisfy({ $0.map(Self.opensAsRegularFile) ?? true }),
                let material = CMemoSSL_lazy_client_new(
                    configuration.certificateChainPath, configuration.privateKeyPath, configuration.trustedCAPath)
            {
                lazy = material
                CMemoSSL_CTX_set_lazy_client(ctx, material)
            } else {
                try Self.loadMaterial(ctx, configuration, operation)
            }
        } else {
            try Self.loadMaterial(ctx, configuration, operation)
        }

        var verify = SSL_VERIFY_PEER
        if isServer, configuration.requireClientCertificate { verify |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT }
        SSL_CTX_set_verify(ctx, verify, nil)
        TLSError.clearQueue()
    }

    deinit {
        SSL_CTX_free(pointer)
        CMemoSSL_lazy_client_free(lazy)
    }

    /// A deferred context (`deferClientMaterial`) whose certificate, key or CA failed to load in a handshake: the
    /// error loading them at once gives (the same as a context that does not defer them gives at start), so that
    /// the handshake's failure names the file and why. nil when nothing failed to load, or it loads now.
    func deferredMaterialError() -> TLSError? {
        guard let lazy, CMemoSSL_lazy_client_counts(lazy).loadFailures > 0 else { return nil }
        var eager = configuration
        eager.deferClientMaterial = false
        do {
            _ = try TLSContext(eager)
            return nil
        } catch {
            return error
        }
    }

    /// How many handshakes loaded the deferred certificate and key, and the CA (0 and 0 when nothing was deferred).
    var deferredLoads: (certificate: Int, authority: Int) {
        guard let lazy else { return (0, 0) }
        let counts = CMemoSSL_lazy_client_counts(lazy)
        return (Int(counts.certificateLoads), Int(counts.caLoads))
    }

    /// Loads the certificate chain and key, the trusted CA and the revocation list named by `configuration`.
    private static func loadMaterial(
        _ ctx: OpaquePointer, _ configuration: TLSConfiguration, _ operation: String
    ) throws(TLSError) {
        let isServer = configuration.role == .server
        if let chain = configuration.certificateChainPath {
            try Self.requireFile(chain, operation)
            TLSError.clearQueue()
            guard SSL_CTX_use_certificate_chain_file(ctx, chain) == 1 else {
                throw TLSError.openSSL("loading certificate chain \(chain)")
            }
            guard let key = configuration.privateKeyPath else {
                throw TLSError(kind: .invalidArgument, operation: operation, detail: "certificate without key")
            }
            try Self.requireFile(key, operation)
            TLSError.clearQueue()
            guard CMemoSSL_CTX_use_PrivateKey_file_EC_first(ctx, key) == 1 else {
                throw TLSError.openSSL("loading private key \(key)")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else {
                throw TLSError.openSSL(operation, kind: .invalidArgument, detail: "\(key) does not match \(chain)")
            }
        } else if isServer {
            throw TLSError(kind: .invalidArgument, operation: operation, detail: "a server needs a certificate")
        }

        if let ca = configuration.trustedCAPath {
            try Self.requireFile(ca, operation)
            TLSError.clearQueue()
            guard SSL_CTX_load_verify_file(ctx, ca) == 1 else {
                throw TLSError.openSSL("loading trusted CA \(ca)")
            }
            if isServer {
                // Tell clients which CA we accept, so one holding several certificates picks the right one.
                TLSError.clearQueue()
                guard let names = SSL_load_client_CA_file(ca) else {
                    throw TLSError.openSSL("loading trusted CA \(ca)")
                }
                SSL_CTX_set_client_CA_list(ctx, names)
            }
            if let list = configuration.revocationListPath {
                try Self.requireFile(list, operation)
                try RevocationList.install(list, into: ctx)
            }
        } else if !isServer || configuration.requireClientCertificate {
            throw TLSError(
                kind: .invalidArgument, operation: operation, detail: "a trusted CA file is needed to verify the peer")
        }
    }

    /// The keys that seal and open session tickets (key name, HMAC key, AES key: 80 bytes), drawn once per
    /// process and given to every server context it makes: a reload of the certificates (a new context) keeps
    /// the tickets already sent good, and a restart makes them all worthless (those clients do one full
    /// handshake). They are not rotated within a process; a ticket's own lifetime bounds its use.
    /// nil if OpenSSL's random generator failed (the context then fails to build).
    static let ticketKeys: [UInt8]? = {
        var keys = [UInt8](repeating: 0, count: 80)
        return RAND_bytes(&keys, Int32(keys.count)) == 1 ? keys : nil
    }()

    /// The TLS 1.2 suites offered, in order of preference.
    static let tls12Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        + "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        + "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

    /// Whether `path` opens for reading as a regular file (what a deferred load will need).
    private static func opensAsRegularFile(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    private static func requireFile(_ path: String, _ operation: String) throws(TLSError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw TLSError(kind: .fileSystem, operation: operation, detail: "\(path): no such file")
        }
    }
}
