import Foundation
import Logging
import ServiceLifecycle
import Testing
import TributaryCluster

/// The leader election of a cluster against a real etcd (Debian's etcd-server): one leader at a time, epochs that
/// only grow, a graceful hand-over, and a leader cut off from etcd that steps down on its own clock before the other
/// node can win.
@Suite("Leader election through etcd", .serialized)
struct LeaderElectionTests {
    /// A node's election, running in a task of its own, with the roles it went through and when.
    final class Node: Sendable {
        let election: LeaderElection
        let seen = Locked<[(ContinuousClock.Instant, ClusterRole)]>([])
        private let task: Task<Void, Never>
        private let watch: Task<Void, Never>
        private let shutdown: ServiceGroup

        init(_ name: String, etcd: [String], mayCampaign: @escaping @Sendable () async -> Bool = { true }) throws {
            let member = ClusterMember(
                name: name, endpoint: "tcp://\(name):7000", feed: "tcp://\(name):7001",
                replication: "tcp://\(name):7002")
            election = LeaderElection(
                etcd: try EtcdClient(endpoints: etcd, timeout: .milliseconds(500)), cluster: "test", member: member,
                mayCampaign: mayCampaign, logger: Logger(label: "election \(name)"))
            shutdown = ServiceGroup(
                configuration: .init(services: [election], logger: Logger(label: "group \(name)")))
            let group = shutdown
            task = Task { try? await group.run() }
            let (roles, seen) = (election.roles(), seen)
            watch = Task {
                for await role in roles { seen.withLock { $0.append((ContinuousClock.now, role)) } }
            }
        }

        /// Stops the election gracefully (it resigns) and waits for it.
        func stop() async {
            await shutdown.triggerGracefulShutdown()
            await task.value
            await watch.value
        }

        /// Waits until the node leads; returns its epoch.
        func leads(timeout: Duration = .seconds(20)) async throws -> Int64 {
            try await waitUntil("\(election) to lead", timeout: timeout) { election.leaderEpoch != nil }
            return try #require(election.leaderEpoch)
        }

        /// When the node first took `role`'s kind (leader or follower) after `instant`.
        func firstTime(after instant: ContinuousClock.Instant, leading: Bool) -> ContinuousClock.Instant? {
            seen.withLock { seen in
                seen.first { $0.0 > instant && ($0.1.leaderEpoch != nil) == leading }?.0
            }
        }
    }

    @Test("one node leads and the other names it; after the leader resigns the other leads under a greater epoch")
    func handOver() async throws {
        let directory = try TemporaryDirectory()
        let etcd = try await EtcdCluster(in: directory)
        let a = try Node("a", etcd: etcd.endpoints)
        let first = try await a.leads()
        let b = try Node("b", etcd: etcd.endpoints)
        try await waitUntil("b to name a as leader") {
            b.election.role
                == .follower(
                    leader: ClusterMember(
                        name: "a", endpoint: "tcp://a:7000", feed: "tcp://a:7001", replication: "tcp://a:7002"),
                    epoch: first)
        }
        #expect(a.election.leaderEpoch == first)
        await a.stop()
        // Resigned: its key is gone (or b's already), not left to lapse with its lease.
        let holder = try await EtcdClient(endpoints: etcd.endpoints).get(LeaderElection.leaderKey(cluster: "test"))
        #expect(holder == nil || holder?.createRevision != first)
        let second = try await b.leads(timeout: .seconds(20))
        #expect(second > first, "epochs only grow")
        #expect(a.election.leaderEpoch == nil)
        await b.stop()
    }

    @Test("a leader cut off from etcd steps down on its own clock before the other node leads; healed, it follows")
    func cutOff() async throws {
        let directory = try TemporaryDirectory()
        let etcd = try await EtcdCluster(in: directory)
        let port = try #require(etcd.endpoints[0].split(separator: ":").last.map(String.init))
        let tap = try TCPTap(port: port, bothWays: true)
        let a = try Node("a", etcd: ["http://127.0.0.1:\(tap.port)"])
        let first = try await a.leads()
        let b = try Node("b", etcd: etcd.endpoints)
        try await waitUntil("b to follow a") { b.election.role != .follower(leader: nil, epoch: 0) }
        let cut = ContinuousClock.now
        try await tap.dropAnswers()
        // Never both leaders: b is read first, so a leader a read after it overlapped with it.
        try await waitUntil("b to lead and a to read as not leading", interval: .milliseconds(5)) {
            let bLeads = b.election.leaderEpoch != nil
            let aLeads = a.election.leaderEpoch != nil
            #expect(!(bLeads && aLeads), "a still leads while b leads")
            return bLeads && !aLeads
        }
        let second = try #require(b.election.leaderEpoch)
        #expect(second > first)
        // And it said so (the router stops serving writes on that).
        #expect(a.firstTime(after: cut, leading: false) != nil, "a never said it stepped down")
        try await tap.forwardAnswers()
        try await waitUntil("a to follow b") {
            if case .follower(let leader, let epoch) = a.election.role { return leader?.name == "b" && epoch == second }
            return false
        }
        await a.stop()
        await b.stop()
    }
}

extension LeaderElectionTests {
    @Test("the sync state is written only under the leader's epoch, and only the nodes it names eligible campaign")
    func syncState() async throws {
        let directory = try TemporaryDirectory()
        let etcd = try await EtcdCluster(in: directory)
        let record = ClusterSyncRecord(etcd: try EtcdClient(endpoints: etcd.endpoints), cluster: "test")
        #expect(try await record.read() == nil)
        #expect(await record.mayCampaign("c"), "a new cluster's nodes may campaign")
        let a = try Node("a", etcd: etcd.endpoints)
        let first = try await a.leads()
        #expect(try await record.record(SyncState(epoch: first, leader: "a", standbys: ["b"])))
        let (mayA, mayB, mayC) = (
            await record.mayCampaign("a"), await record.mayCampaign("b"), await record.mayCampaign("c")
        )
        #expect(mayA && mayB)
        #expect(!mayC, "not in sync")
        // c may not campaign: once a resigns it finds no leader and stays a follower (had it campaigned, it would
        // lead now, alone with etcd); then b, which may, leads.
        let c = try Node("c", etcd: etcd.endpoints, mayCampaign: { await record.mayCampaign("c") })
        try await waitUntil("c to follow a") { c.election.role != .follower(leader: nil, epoch: 0) }
        await a.stop()
        try await waitUntil("c to find no leader") { c.election.role == .follower(leader: nil, epoch: 0) }
        let b = try Node("b", etcd: etcd.endpoints, mayCampaign: { await record.mayCampaign("b") })
        let second = try await b.leads()
        #expect(c.seen.value.allSatisfy { $0.1.leaderEpoch == nil }, "c never led")
        // a, deposed, can no longer write the state; b can.
        #expect(try await !record.record(SyncState(epoch: first, leader: "a", standbys: [])))
        #expect(try await record.read()?.epoch == first)
        #expect(try await record.record(SyncState(epoch: second, leader: "b", standbys: [], asynchronous: true)))
        let (aAfter, bAfter) = (await record.mayCampaign("a"), await record.mayCampaign("b"))
        #expect(!aAfter && bAfter, "asynchronous: only the leader")
        await b.stop()
        await c.stop()
    }
}
