/// What a store says about itself for `status` and `/metrics`: its kind and place, its size and history, and for a
/// shared store (PostgreSQL) how well it follows the database. Read from any thread; cheap.
public struct StoreStatus: Sendable, Hashable {
    /// `memory`, `sqlite` or `postgresql`.
    public var kind: String
    /// The file, or the database's URI without its password; nil for the memory store.
    public var location: String?
    public var memoCount: Int
    /// The oldest revision a subscription may resume after.
    public var oldestRetained: UInt64
    /// Only for a store that shares its database with other servers.
    public var shared: SharedStoreStatus?

    public init(
        kind: String, location: String?, memoCount: Int, oldestRetained: UInt64, shared: SharedStoreStatus? = nil
    ) {
        self.kind = kind
        self.location = location
        self.memoCount = memoCount
        self.oldestRetained = oldestRetained
        self.shared = shared
    }
}

/// How a server over a shared database follows it.
public struct SharedStoreStatus: Sendable, Hashable {
    /// The newest revision this server applied.
    public var appliedRevision: UInt64
    /// The newest revision this server knows the database holds (from its reads, its notifications and its own
    /// writes); at least `appliedRevision`.
    public var databaseHead: UInt64
    /// Seconds since the feed last read the database to its end or applied a change; nil before it first did.
    public var secondsSinceFeedProgress: Double?
    /// Batches the writer sent, and the writes in them, since the store opened.
    public var writerBatches: UInt64
    public var writerWrites: UInt64
    /// Mean seconds from sending a batch to its commit's answer, since the store opened; nil before any batch.
    public var meanCommitSeconds: Double?
    /// The last batch's size and commit time.
    public var lastBatchSize: Int?
    public var lastCommitSeconds: Double?

    public init(
        appliedRevision: UInt64, databaseHead: UInt64, secondsSinceFeedProgress: Double?, writerBatches: UInt64,
        writerWrites: UInt64, meanCommitSeconds: Double?, lastBatchSize: Int?, lastCommitSeconds: Double?
    ) {
        self.appliedRevision = appliedRevision
        self.databaseHead = databaseHead
        self.secondsSinceFeedProgress = secondsSinceFeedProgress
        self.writerBatches = writerBatches
        self.writerWrites = writerWrites
        self.meanCommitSeconds = meanCommitSeconds
        self.lastBatchSize = lastBatchSize
        self.lastCommitSeconds = lastCommitSeconds
    }
}
