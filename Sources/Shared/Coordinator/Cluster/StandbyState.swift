import Synchronization
import TributaryCluster
import TributaryCore

/// What a standby knows of itself while it follows a primary, for its HTTP endpoint
/// (``/TributaryCore/StandbyStatus``): set when the role starts, and as records are applied.
public final class StandbyState: Sendable {
    private let cluster: String
    private let node: String
    private let epoch: Int64
    private let primary: StandbyStatus.Primary
    private let applied = Mutex<(position: UInt64, at: ContinuousClock.Instant)>((0, .now))

    init(cluster: String, node: String, leader: ClusterMember, epoch: Int64) {
        self.cluster = cluster
        self.node = node
        self.epoch = epoch
        primary = .init(name: leader.name, endpoint: leader.endpoint, feed: leader.feed)
    }

    /// The store holds the records through `position`.
    func applied(through position: UInt64) {
        applied.withLock { $0 = (position, .now) }
    }

    /// The standby's store held the records through `position` when the role began.
    func began(at position: UInt64) {
        applied.withLock { $0.position = position }
    }

    /// Its status now.
    public func status() -> StandbyStatus {
        let (position, at) = applied.withLock { $0 }
        let since = (ContinuousClock.now - at).components
        return StandbyStatus(
            cluster: cluster, node: node, epoch: epoch, primary: primary, lastRecord: position,
            secondsSinceRecord: Double(since.seconds) + Double(since.attoseconds) / 1e18)
    }
}
