/// A cluster's standby as it sees itself (docs/failover.md, "Watching a cluster"): what its HTTP endpoint's
/// `/api/status` answers. A standby takes no requests over ZeroMQ (it answers them `NOT_PRIMARY`); the primary's
/// status (``ClusterStatus``) shows how far behind each standby is in records.
public struct StandbyStatus: Sendable, Equatable, Encodable {
    /// The primary it follows, as the election names it.
    public struct Primary: Sendable, Equatable, Encodable {
        /// Its name in the cluster.
        public var name: String
        /// Its jobs/control endpoint, where clients go instead.
        public var endpoint: String
        /// Its feed endpoint.
        public var feed: String

        /// The primary named `name`, serving clients at `endpoint` and the feed at `feed`.
        public init(name: String, endpoint: String, feed: String) {
            self.name = name
            self.endpoint = endpoint
            self.feed = feed
        }
    }

    /// Always `standby`: beside the primary's status, which says `primary`.
    public var role = "standby"
    /// The cluster's name (`--cluster`).
    public var cluster: String
    /// This node's name in it (`--name`).
    public var node: String
    /// The epoch of the primary it follows.
    public var epoch: Int64
    /// The primary it follows.
    public var primary: Primary
    /// The position of the last record its store holds, synced.
    public var lastRecord: UInt64
    /// Seconds since it last applied records (or since it began following, before any): a standby in sync with an
    /// idle primary reads high too; the primary's status has the lag in records.
    public var secondsSinceRecord: Double

    /// A standby's view of itself.
    public init(
        cluster: String, node: String, epoch: Int64, primary: Primary, lastRecord: UInt64, secondsSinceRecord: Double
    ) {
        self.cluster = cluster
        self.node = node
        self.epoch = epoch
        self.primary = primary
        self.lastRecord = lastRecord
        self.secondsSinceRecord = secondsSinceRecord
    }
}
