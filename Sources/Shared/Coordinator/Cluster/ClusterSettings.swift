import Foundation
import TributaryCluster

/// How a coordinator takes part in a cluster (docs/failover.md): the cluster and its own name, etcd's endpoints,
/// where its standbys connect while it is primary, and whether it may acknowledge without a standby.
public struct ClusterSettings: Sendable {
    /// The cluster's name: its keys in etcd are under `/tributary/NAME/`.
    public var cluster: String
    /// This coordinator's name, unique in the cluster.
    public var name: String
    /// etcd's client URLs, `http://HOST:PORT`.
    public var etcd: [String]
    /// The replication endpoint bound while primary, `tcp://HOST:PORT`.
    public var replicationListen: String
    /// The host the other members and the clients reach this one at, in place of the endpoints' own host (for an
    /// endpoint bound on `0.0.0.0`); nil advertises the endpoints as they are.
    public var advertiseHost: String?
    /// Where the standbys reach the replication endpoint when not where it binds (a forwarded port, a proxy; as
    /// Patroni's `connect_address`); nil: ``replicationListen`` under ``advertiseHost``.
    public var replicationAdvertise: String?
    /// Acknowledge commits without waiting for a standby: recorded in etcd first, so that no standby is promoted.
    public var asynchronous = false
    /// The election's timings.
    public var election = LeaderElection.Settings()
    /// How long a new primary leaves the jobs its predecessors leased running for their workers to register with it
    /// and take them on (docs/failover.md, 'Jobs across a failover'); then those not taken on go back to the queue,
    /// their attempts lost. A worker registers within about a heartbeat of the new primary binding.
    public var jobAdoptionWindow: Duration = .seconds(5)

    /// A member of `cluster` named `name`, reaching etcd at `etcd` and serving standbys at `replicationListen`.
    public init(cluster: String, name: String, etcd: [String], replicationListen: String) {
        self.cluster = cluster
        self.name = name
        self.etcd = etcd
        self.replicationListen = replicationListen
    }

    /// This coordinator as the others find it in etcd, its endpoints advertised under ``advertiseHost`` (the
    /// replication endpoint as ``replicationAdvertise`` says, when it does).
    func member(listen: String, feed: String) -> ClusterMember {
        ClusterMember(
            name: name, endpoint: advertised(listen), feed: advertised(feed),
            replication: replicationAdvertise ?? advertised(replicationListen))
    }

    /// `endpoint` (`tcp://HOST:PORT`) with its host replaced by ``advertiseHost``.
    func advertised(_ endpoint: String) -> String {
        guard let advertiseHost, let colon = endpoint.lastIndex(of: ":") else { return endpoint }
        return "tcp://\(advertiseHost)\(endpoint[colon...])"
    }

    /// Why these settings cannot work with `listen` and `feed`, or nil: every endpoint a member advertises needs a
    /// port of its own (not `*`), and a host others can reach (not `0.0.0.0` or `*` without ``advertiseHost``).
    public func refusal(listen: String, feed: String) -> String? {
        guard !cluster.isEmpty, cluster.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            return "--cluster must be a name of letters, digits, '-', '_' or '.', not '\(cluster)'"
        }
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            return "--name must be a name of letters, digits, '-', '_' or '.', not '\(name)'"
        }
        guard !etcd.isEmpty else { return "--cluster needs etcd's endpoints (--etcd http://HOST:2379[,…])" }
        for (endpoint, flag) in [(listen, "--listen"), (feed, "--feed"), (replicationListen, "--replication-listen")] {
            guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":"),
                Int(endpoint[endpoint.index(after: colon)...]) != nil
            else {
                return
                    "\(flag) must be tcp://HOST:PORT with a port of its own in a cluster (the others find it in etcd), not '\(endpoint)'"
            }
            let host = endpoint.dropFirst("tcp://".count).prefix { $0 != ":" }
            if advertiseHost == nil, host == "0.0.0.0" || host == "*",
                flag != "--replication-listen" || replicationAdvertise == nil
            {
                return "\(flag) binds \(host): say with --advertise-host where the others reach this coordinator"
            }
        }
        return nil
    }
}
