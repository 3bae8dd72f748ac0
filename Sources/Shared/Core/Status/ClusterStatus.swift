/// A cluster's primary and the standbys that follow it, as its status shows them (`ClusterInfo`, docs/failover.md):
/// only the primary answers a status (a standby answers `NOT_PRIMARY`; its own view is ``StandbyStatus``).
public struct ClusterStatus: Sendable, Equatable {
    /// A standby that said hello to the primary.
    public struct Standby: Sendable, Equatable {
        /// Its name in the cluster.
        public var name: String
        /// The last record it holds, synced.
        public var acknowledged: UInt64
        /// Whether it held every record once: each write waits for it from then on.
        public var inSync: Bool
        /// Records the primary holds beyond what it acknowledged.
        public var lagRecords: UInt64
        /// Whether the primary heard from it lately (within the 3 s after which one in sync is dropped).
        public var connected: Bool

        /// A standby as its primary sees it.
        public init(name: String, acknowledged: UInt64, inSync: Bool, lagRecords: UInt64, connected: Bool = true) {
            self.name = name
            self.acknowledged = acknowledged
            self.inSync = inSync
            self.lagRecords = lagRecords
            self.connected = connected
        }
    }

    /// The cluster's name (`--cluster`).
    public var cluster: String
    /// This coordinator's name in it (`--name`).
    public var node: String
    /// The leader epoch it writes under.
    public var epoch: Int64
    /// Whether it acknowledges without waiting for a standby (`--asynchronous-replication`).
    public var asynchronous: Bool
    /// The position of the store's last replication record.
    public var lastRecord: UInt64
    /// The standbys that said hello, by name.
    public var standbys: [Standby]
    /// Committed writes not acknowledged yet: they wait for the standbys' copies.
    public var heldWrites: UInt64
    /// Writes are committed and held for want of a standby (strict replication): none is in sync, or one in sync is
    /// gone and not yet dropped from the cluster's record.
    public var writesBlocked: Bool

    /// A primary's replication as it stands.
    public init(
        cluster: String, node: String, epoch: Int64, asynchronous: Bool, lastRecord: UInt64, standbys: [Standby],
        heldWrites: UInt64, writesBlocked: Bool
    ) {
        self.cluster = cluster
        self.node = node
        self.epoch = epoch
        self.asynchronous = asynchronous
        self.lastRecord = lastRecord
        self.standbys = standbys
        self.heldWrites = heldWrites
        self.writesBlocked = writesBlocked
    }
}
