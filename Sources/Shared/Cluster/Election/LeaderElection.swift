import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A node's campaign for the leadership of its cluster, with etcd as the authority: the node keeps a lease alive
/// (granted for ``Settings/leaseSeconds``, renewed every ``Settings/renewal``) and, while no leader key exists and
/// it may campaign, creates the key `/tributary/CLUSTER/leader` under that lease in one transaction (a compare of the
/// key's create revision with 0). The key's create revision is the leader's **epoch**.
///
/// A leader stops being one on its own clock: it counts as leader only until its last renewal's send time plus the
/// lease's seconds, less ``Settings/margin`` (``role``, ``leaderEpoch``), so a leader cut off from etcd, or paused,
/// has stepped down before etcd lets the lease lapse and another node can win. It also checks at each renewal that
/// the key is still the one it created. A lease is not a lock, though: what a leader writes elsewhere carries its
/// epoch, and the receivers refuse an epoch older than the newest they have seen.
///
/// On graceful shutdown a leader deletes its key and revokes its lease, so a follower takes over at once.
public final class LeaderElection: Service, Sendable {
    /// The election's timings.
    public struct Settings: Sendable {
        /// The lease's time to live, in etcd's whole seconds.
        public var leaseSeconds: Int64 = 3
        /// How often the lease is renewed.
        public var renewal: Duration = .seconds(1)
        /// How often a follower looks for the leader key.
        public var poll: Duration = .milliseconds(250)
        /// How long before its lease could lapse a leader stops counting as one (clock rates, etcd's own timing).
        public var margin: Duration = .milliseconds(500)

        /// The defaults: a 3 s lease renewed every second, the leader key looked for every 250 ms, 0.5 s of margin.
        public init() {}
    }

    private struct State {
        var role = ClusterRole.follower(leader: nil, epoch: 0)
        /// While leading: until when, on this clock.
        var leadingUntil: ContinuousClock.Instant?
        var watchers: [UInt64: AsyncStream<ClusterRole>.Continuation] = [:]
        var nextWatcher: UInt64 = 0
    }

    /// The key that names the leader of `cluster`.
    public static func leaderKey(cluster: String) -> String { "/tributary/\(cluster)/leader" }

    private let etcd: EtcdClient
    private let key: String
    private let member: ClusterMember
    private let settings: Settings
    private let mayCampaign: @Sendable () async -> Bool
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - mayCampaign: asked before each attempt to become leader (a standby not in sync may not).
    public init(
        etcd: EtcdClient, cluster: String, member: ClusterMember, settings: Settings = Settings(),
        mayCampaign: @escaping @Sendable () async -> Bool = { true }, logger: Logger
    ) {
        self.etcd = etcd
        key = Self.leaderKey(cluster: cluster)
        self.member = member
        self.settings = settings
        self.mayCampaign = mayCampaign
        self.logger = logger
    }

    /// The role now: a leader whose time is up reads as a follower, even before the campaign's loop has run.
    public var role: ClusterRole {
        state.withLock { state in
            if case .leader = state.role, let until = state.leadingUntil, ContinuousClock.now >= until {
                return .follower(leader: nil, epoch: 0)
            }
            return state.role
        }
    }

    /// The epoch this node leads under now, nil when it does not lead.
    public var leaderEpoch: Int64? { role.leaderEpoch }

    /// The role now, then each change, until the election ends.
    public func roles() -> AsyncStream<ClusterRole> {
        let (stream, continuation) = AsyncStream.makeStream(of: ClusterRole.self, bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = continuation
            return state.nextWatcher
        }
        continuation.yield(role)
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Campaigns, leads and follows until graceful shutdown; then resigns (deletes its key if it leads, revokes its
    /// lease).
    public func run() async throws {
        let campaign = await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Campaign?.self) { group in
                group.addTask { await self.campaign() }
                group.addTask {
                    await self.watchTheClock()
                    return nil
                }
                // Both end on cancellation; the campaign's state says what to resign.
                var campaign: Campaign?
                for await ended in group where ended != nil { campaign = ended }
                return campaign ?? Campaign()
            }
        }
        await resign(campaign)
        finish()
    }

    /// Renews, leads, follows and campaigns until cancelled; returns where it was, for ``resign(_:)``.
    private func campaign() async -> Campaign {
        var campaign = Campaign()
        while !Task.isCancelled {
            do {
                try await step(&campaign)
            } catch is CancellationError {
                break
            } catch {
                logger.warning("etcd: \(error)")
            }
            expireIfDue()
            let wait = leaderEpoch == nil ? settings.poll : settings.renewal
            let due = min(campaign.nextRenewal, ContinuousClock.now + wait)
            try? await Task.sleep(until: due, clock: .continuous)
        }
        return campaign
    }

    /// Steps down as soon as a leader's time is up, while the campaign may be waiting for etcd.
    private func watchTheClock() async {
        while !Task.isCancelled {
            let until = state.withLock { $0.leadingUntil } ?? ContinuousClock.now + settings.poll
            try? await Task.sleep(until: min(until, ContinuousClock.now + settings.poll), clock: .continuous)
            expireIfDue()
        }
    }

    /// What the loop carries from one step to the next.
    private struct Campaign {
        var lease: Int64?
        /// When the lease could lapse at the latest, as known here: the last renewal's send time plus its TTL.
        var leaseLapses = ContinuousClock.now
        var nextRenewal = ContinuousClock.now
    }

    /// One pass: renews the lease when due; a leader checks its key, a follower looks for the leader and
    /// campaigns when there is none.
    private func step(_ campaign: inout Campaign) async throws {
        let now = ContinuousClock.now
        if campaign.lease == nil {
            let lease = try await etcd.grantLease(seconds: settings.leaseSeconds)
            campaign.lease = lease
            campaign.leaseLapses = now + .seconds(settings.leaseSeconds)
            campaign.nextRenewal = now + settings.renewal
        } else if now >= campaign.nextRenewal, let lease = campaign.lease {
            campaign.nextRenewal = now + settings.renewal
            let seconds = try await etcd.keepAlive(lease)
            guard seconds > 0 else {
                campaign.lease = nil
                stepDown("its lease lapsed")
                return
            }
            campaign.leaseLapses = now + .seconds(seconds)
            extendLeadership(until: campaign.leaseLapses - settings.margin)
        }
        guard let lease = campaign.lease else { return }
        let current = try await etcd.get(key)
        if let epoch = leaderEpoch {
            if current?.createRevision != epoch {
                stepDown("the leader key is no longer its own")
            }
            return
        }
        if let current {
            if current.lease == lease, ContinuousClock.now < campaign.leaseLapses - settings.margin {
                // Its own key, under its own lease (a creation retried on another member, or a leadership whose
                // time ran out while the lease lived on): no one else can have led meanwhile, so it leads again.
                publish(.leader(epoch: current.createRevision), leadingUntil: campaign.leaseLapses - settings.margin)
                logger.info("leads cluster again as '\(member.name)' under epoch \(current.createRevision)")
            } else {
                follow(current)
            }
            return
        }
        guard await mayCampaign() else {
            publish(.follower(leader: nil, epoch: 0), leadingUntil: nil)
            return
        }
        let encoded = Array(try JSONEncoder().encode(member))
        switch try await etcd.create(key, value: encoded, lease: lease) {
        case .created(let epoch):
            // The lease's time left, as known from its grant or last renewal, bounds the leadership.
            publish(.leader(epoch: epoch), leadingUntil: campaign.leaseLapses - settings.margin)
            logger.info("leads cluster as '\(member.name)' under epoch \(epoch)")
        case .exists(let holder):
            follow(holder)
        }
    }

    private func follow(_ holder: EtcdKeyValue) {
        let leader = try? JSONDecoder().decode(ClusterMember.self, from: Data(holder.value))
        publish(.follower(leader: leader, epoch: holder.createRevision), leadingUntil: nil)
    }

    private func extendLeadership(until instant: ContinuousClock.Instant) {
        state.withLock { state in
            if state.role.leaderEpoch != nil, let until = state.leadingUntil, ContinuousClock.now < until {
                state.leadingUntil = instant
            }
        }
    }

    /// A leader whose time is up becomes a follower (``role`` already reads so).
    private func expireIfDue() {
        let due = state.withLock { state in
            state.role.leaderEpoch != nil && (state.leadingUntil.map { ContinuousClock.now >= $0 } ?? true)
        }
        if due { stepDown("its lease may have lapsed") }
    }

    private func stepDown(_ why: String) {
        guard let epoch = state.withLock({ $0.role.leaderEpoch }) else { return }
        logger.warning("steps down from epoch \(epoch): \(why)")
        publish(.follower(leader: nil, epoch: 0), leadingUntil: nil)
    }

    private func publish(_ role: ClusterRole, leadingUntil: ContinuousClock.Instant?) {
        let watchers = state.withLock { state -> [AsyncStream<ClusterRole>.Continuation] in
            state.leadingUntil = leadingUntil
            guard state.role != role else { return [] }
            state.role = role
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.yield(role) }
    }

    /// Hands the leadership over at once rather than when the lease lapses.
    private func resign(_ campaign: Campaign) async {
        let epoch = state.withLock { $0.role.leaderEpoch }
        publish(.follower(leader: nil, epoch: 0), leadingUntil: nil)
        if let epoch { _ = try? await etcd.delete(key, createdAt: epoch) }
        if let lease = campaign.lease { try? await etcd.revoke(lease) }
    }

    private func finish() {
        let watchers = state.withLock { state in
            defer { state.watchers = [:] }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }
}
