import MemoWire

/// The limits a server enforces on each connection and in all; each is a `memo-server serve` flag.
public struct ServerLimits: Sendable, Hashable {
    /// The largest frame accepted or sent, length prefix included.
    public var maxFrameSize = WireProtocol.defaultMaxFrameSize
    /// Unanswered requests one connection may have (writes waiting for the store, lists not
    /// yet sent in full, subscriptions open).
    public var maxInFlight = 1024
    /// Subscriptions one connection may hold open.
    public var maxSubscriptions = 64
    /// Bytes queued for one connection before it is dropped as a slow consumer.
    public var maxOutboundBytes = 8 << 20
    /// Connections served at once; more are told `too-many-connections` and closed.
    public var maxConnections = 16_384
    /// Seconds a connection has to finish TLS and `hello`.
    public var handshakeTimeout: Double = 10
    /// Seconds after which a connection still before `hello` may be closed to make room for a new one when the
    /// server is at `maxConnections` (the oldest such connection goes first); younger ones are left to finish.
    public var evictableAfter: Double = 1
    /// Seconds a frame, once begun, may take to arrive whole; a peer that stops mid-frame is closed with 304.
    public var frameTimeout: Double = 30

    /// Whether a change's records for a loop's subscribers go to the kernel in one io_uring submission
    /// (`--sends batched`, the default) rather than one `send` each (`--sends each`). Where the kernel refuses
    /// io_uring, every record goes by `send`.
    public var batchedSends = true

    /// The newest protocol version this server agrees to (`WireProtocol.version`); a test sets 1 to serve as a
    /// server older than `list-page` would.
    public var protocolVersion = WireProtocol.version
    public init() {}
}
