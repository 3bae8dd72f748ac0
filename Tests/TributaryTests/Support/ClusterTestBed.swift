import Foundation
import TributaryCluster

@testable import TributaryDemo

/// What a failover test runs its cluster on: a directory of its own, a real etcd of `etcdMembers` members, the
/// cluster's sync record read through it, the demo model, and the nodes it starts (``node(_:etcd:ports:arguments:)``),
/// all members of the cluster ``cluster``.
struct ClusterTestBed {
    /// The cluster's name.
    static let cluster = "t"

    let directory: TemporaryDirectory
    let etcd: EtcdCluster
    /// A client of the test's own to etcd.
    let etcdClient: EtcdClient
    /// The cluster's sync state in etcd.
    let sync: ClusterSyncRecord
    let modelPath: String

    /// Starts etcd in `directory` (a new one when nil); the nodes run the demo model unless `modelPath` names another.
    init(etcdMembers: Int = 3, in directory: TemporaryDirectory? = nil, modelPath: String? = nil) async throws {
        let directory = try directory ?? TemporaryDirectory()
        self.directory = directory
        etcd = try await EtcdCluster(count: etcdMembers, in: directory)
        etcdClient = try EtcdClient(endpoints: etcd.endpoints)
        sync = ClusterSyncRecord(etcd: etcdClient, cluster: Self.cluster)
        self.modelPath = try modelPath ?? directory.write("model.json", DemoData.modelJSON)
    }

    /// Starts the member `name`, reaching etcd at `endpoints` (every member's by default), on `ports` (listen, feed,
    /// replication) or free ones, with `arguments` added.
    func node(_ name: String, etcd endpoints: [String]? = nil, ports: [Int]? = nil, arguments: [String] = [])
        throws -> ClusterNodeProcess
    {
        try ClusterNodeProcess(
            name: name, cluster: Self.cluster, etcd: endpoints ?? etcd.endpoints, modelPath: modelPath,
            in: directory, ports: ports, arguments: arguments)
    }

    /// Starts a, b and c: a the primary, b and c its standbys, returning once the sync state names both.
    func primaryWithTwoStandbys() async throws -> (ClusterNodeProcess, ClusterNodeProcess, ClusterNodeProcess) {
        let a = try node("a")
        try await a.waitFor("ready")
        let (b, c) = (try node("b"), try node("c"))
        for standby in [b, c] { try await standby.waitFor("standby of=a") }
        try await waitUntil("b and c to be recorded in sync") { (try? await sync.read())??.standbys == ["b", "c"] }
        return (a, b, c)
    }
}
