/// A coordinator of a cluster as the others and the clients find it: its name and where it serves.
public struct ClusterMember: Codable, Sendable, Equatable {
    /// Unique in the cluster (`--name`).
    public let name: String
    /// Where clients and workers connect (the coordinator's ZeroMQ endpoint, as they reach it).
    public let endpoint: String
    /// Where subscribers follow the feed.
    public let feed: String
    /// Where its standbys connect while it is primary (its replication endpoint, as they reach it).
    public let replication: String

    /// A member named `name`, serving clients at `endpoint`, the feed at `feed` and standbys at `replication`.
    public init(name: String, endpoint: String, feed: String, replication: String) {
        self.name = name
        self.endpoint = endpoint
        self.feed = feed
        self.replication = replication
    }
}

/// What a node of a cluster is at a moment, as its ``LeaderElection`` knows it.
public enum ClusterRole: Sendable, Equatable {
    /// Not leading: the leader etcd names (nil while there is none) and that leader's epoch (0 then).
    case follower(leader: ClusterMember?, epoch: Int64)
    /// Leading under `epoch`, the leader key's create revision in etcd: a fencing token that only grows.
    case leader(epoch: Int64)

    /// The epoch when leading.
    public var leaderEpoch: Int64? {
        if case .leader(let epoch) = self { return epoch }
        return nil
    }
}
