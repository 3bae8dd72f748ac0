import Foundation

/// What a cluster's leader records in etcd about its standbys (`/tributary/CLUSTER/sync`, Patroni's sync key): who
/// holds every acknowledged commit, and so who may take over. Written only under the leader's epoch (a compare on
/// the leader key's create revision), so a deposed leader cannot change it.
public struct SyncState: Codable, Sendable, Equatable {
    /// The leader epoch it was written under.
    public var epoch: Int64
    /// The leader that wrote it.
    public var leader: String
    /// The standbys in sync: every acknowledged commit waited for each of them.
    public var standbys: [String]
    /// The leader acknowledges commits without a standby: no standby is eligible.
    public var asynchronous: Bool

    /// The state a leader of `epoch` named `leader` records.
    public init(epoch: Int64, leader: String, standbys: [String], asynchronous: Bool = false) {
        self.epoch = epoch
        self.leader = leader
        self.standbys = standbys
        self.asynchronous = asynchronous
    }

    /// Whether the node named `name` holds every acknowledged commit as far as this state says: the leader that
    /// wrote it, or a standby it names in sync (none when it went on asynchronously).
    public func isEligible(_ name: String) -> Bool {
        name == leader || (!asynchronous && standbys.contains(name))
    }
}

/// Reads and writes a cluster's ``SyncState`` in etcd.
public struct ClusterSyncRecord: Sendable {
    private let etcd: EtcdClient
    private let key: String
    private let leaderKey: String

    /// The sync state of `cluster`, through `etcd`.
    public init(etcd: EtcdClient, cluster: String) {
        self.etcd = etcd
        key = "/tributary/\(cluster)/sync"
        leaderKey = LeaderElection.leaderKey(cluster: cluster)
    }

    /// Records `state` while its writer still leads under `state.epoch`: false when the leader key is no longer
    /// that epoch's (the writer was deposed), and nothing was written.
    public func record(_ state: SyncState) async throws -> Bool {
        try await etcd.put(key, value: Array(try JSONEncoder().encode(state)), while: leaderKey, createdAt: state.epoch)
    }

    /// The state recorded last; nil in a cluster that never recorded one.
    public func read() async throws -> SyncState? {
        guard let stored = try await etcd.get(key) else { return nil }
        return try JSONDecoder().decode(SyncState.self, from: Data(stored.value))
    }

    /// Whether the node named `name` may campaign: a new cluster's nodes may; afterwards only a node the last state
    /// names eligible (``SyncState/isEligible(_:)``). False when etcd cannot be read.
    public func mayCampaign(_ name: String) async -> Bool {
        do {
            guard let state = try await read() else { return true }
            return state.isEligible(name)
        } catch {
            return false
        }
    }
}
