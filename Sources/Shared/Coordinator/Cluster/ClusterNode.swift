import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCluster
import ZeroMQ

/// A coordinator as a member of a cluster (docs/failover.md): it campaigns through etcd (`LeaderElection`) and
/// runs as what the election makes it, one role at a time on the same store file:
///
/// - **primary** (leading under an epoch): the whole coordinator (``CoordinatorService``) with its store recording
///   every write transaction and the `ReplicationStage` holding each until the standbys in sync have it; it records
///   in etcd who holds every acknowledged commit (`SyncStateKeeper`). Once its leadership lapses (its own clock) it
///   releases nothing more and abandons what it held, then stops serving.
/// - **standby** (another member leads): the store, its writer and a `ReplicaLink` applying the primary's records.
///   Its jobs/control endpoint answers every request `NOT_PRIMARY`, naming the primary (`StandbyRouter`).
///
/// A node that is neither (no leader yet, or the leader key still names this node's previous run) waits. At graceful
/// shutdown the role stops first (a primary drains as a coordinator does), then the election resigns.
public struct ClusterNode: Service {
    let configuration: CoordinatorConfiguration
    let settings: ClusterSettings
    let logger: Logger
    let services: @Sendable (CoordinatorServer) -> [any Service]
    let ready: @Sendable (CoordinatorServer) -> Void
    let standbyServices: @Sendable (StandbyState) -> [any Service]
    let standing: @Sendable (ClusterStanding) -> Void

    /// A member of the cluster `configuration.cluster` names.
    ///
    /// - Parameters:
    ///   - configuration: the coordinator's configuration, its ``CoordinatorConfiguration/cluster`` set.
    ///   - logger: where the node and the coordinator it runs log.
    ///   - services: more services beside the router while primary (the HTTP endpoint), as ``CoordinatorService``
    ///     takes them.
    ///   - ready: called each time the node serves as primary, as ``CoordinatorService`` calls it.
    ///   - standbyServices: more services beside the standby's while it follows a primary (its HTTP endpoint).
    ///   - standing: told each role the node takes.
    /// - Throws: ``ConfigurationError`` when the configuration names no cluster.
    public init(
        configuration: CoordinatorConfiguration, logger: Logger,
        services: @escaping @Sendable (CoordinatorServer) -> [any Service] = { _ in [] },
        ready: @escaping @Sendable (CoordinatorServer) -> Void = { _ in },
        standbyServices: @escaping @Sendable (StandbyState) -> [any Service] = { _ in [] },
        standing: @escaping @Sendable (ClusterStanding) -> Void = { _ in }
    ) throws {
        guard let settings = configuration.cluster else {
            throw ConfigurationError(message: "a cluster node needs the cluster's settings")
        }
        self.configuration = configuration
        self.settings = settings
        self.logger = logger
        self.services = services
        self.ready = ready
        self.standbyServices = standbyServices
        self.standing = standing
    }

    public func run() async throws {
        let etcd = try EtcdClient(endpoints: settings.etcd)
        let sync = ClusterSyncRecord(etcd: etcd, cluster: settings.cluster)
        let name = settings.name
        let election = LeaderElection(
            etcd: etcd, cluster: settings.cluster,
            member: settings.member(listen: configuration.listen, feed: configuration.feed),
            settings: settings.election,
            mayCampaign: { [storePath = configuration.storePath] in
                let recorded: SyncState?
                do {
                    recorded = try await sync.read()
                } catch {
                    return false  // etcd unreadable: not now
                }
                // A new cluster's nodes may; afterwards only a node the last state names eligible, and only with a
                // store that holds the cluster's history (not a new or wiped one).
                guard let state = recorded else { return true }
                guard state.isEligible(name) else { return false }
                let tail = try? await BlockingWork.run { try ReplicationTail.read(storeAt: storePath) }
                return tail.map { $0 != .empty } ?? false
            }, logger: logger)
        // Outside the graceful shutdown's reach (no task-local of the group): it resigns only once the role stopped,
        // so a primary that drains still leads while it does.
        let campaign = Task.detached { try await election.run() }
        defer { campaign.cancel() }
        var role: ClusterRole? = election.role
        // How many times this node served as primary under each epoch: a run's worker ids are its own.
        var runs: [Int64: Int] = [:]
        while let current = role, !Task.isShuttingDownGracefully, !Task.isCancelled {
            switch current {
            case .leader(let epoch):
                runs[epoch, default: 0] += 1
                role = try await lead(epoch: epoch, run: runs[epoch]!, election: election, sync: sync)
            case .follower(let leader?, let epoch) where leader.name != name:
                role = try await follow(leader, epoch: epoch, election: election)
            case .follower:
                standing(.waiting)
                role = await cancelWhenGracefulShutdown { await election.roles().first { $0 != current } }
            }
            // A role that ended on its own (a service failed) is taken again, after a pause.
            if role == nil, !Task.isShuttingDownGracefully, !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                role = election.role
            }
        }
        campaign.cancel()
        _ = try? await campaign.value
    }
}

/// What a cluster node is doing, as ``ClusterNode`` tells it.
public enum ClusterStanding: Sendable, Equatable {
    /// Serving as primary under `epoch`.
    case primary(epoch: Int64)
    /// Applying the records of `leader`, the primary of `epoch`.
    case standby(leader: String, epoch: Int64)
    /// Neither: no leader, or one this node cannot follow yet.
    case waiting
    /// It was primary under `epoch` and stopped: its leadership lapsed, or another node leads.
    case deposed(epoch: Int64)
}
