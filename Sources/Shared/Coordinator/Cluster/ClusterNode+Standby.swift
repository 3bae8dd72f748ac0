import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryCluster
import ZeroMQ

/// The standby's role: the store taking the primary's records, or replaced by its snapshot when they cannot bring
/// it on.
extension ClusterNode {
    /// Applies the records of `leader`, the primary of `epoch`, until this node leads or another primary is named,
    /// or graceful shutdown. Returns the role that ended it; nil at shutdown.
    func follow(_ leader: ClusterMember, epoch: Int64, election: LeaderElection) async throws -> ClusterRole? {
        // A primary of another epoch, or this node's turn; a leader key that vanished is no reason to stop.
        let changed = { @Sendable (role: ClusterRole) -> Bool in
            switch role {
            case .leader: true
            case .follower(let other?, let otherEpoch): other.name != leader.name || otherEpoch != epoch
            case .follower(nil, _): false
            }
        }
        while true {
            switch try await takeRecords(from: leader, epoch: epoch, election: election, until: changed) {
            case .roleChanged(let role):
                return role
            case .stopped:
                return nil
            case .snapshotNeeded(let reason):
                logger.notice("standby of '\(leader.name)' replaces its store with the primary's snapshot: \(reason)")
                let fetched = try await withThrowingTaskGroup(of: StandbyEnd?.self) { tasks in
                    tasks.addTask {
                        try await fetchSnapshot(from: leader)
                        return nil
                    }
                    tasks.addTask {
                        let next = await election.roles().first(where: changed)
                        return Task.isCancelled ? nil : .roleChanged(next)
                    }
                    defer { tasks.cancelAll() }
                    return try await tasks.next() ?? nil
                }
                if case .roleChanged(let role) = fetched { return role }
                if Task.isShuttingDownGracefully { return nil }
            }
        }
    }

    /// Fetches `leader`'s snapshot beside the store and puts it in the store's place.
    private func fetchSnapshot(from leader: ClusterMember) async throws {
        let storePath = configuration.storePath
        let path = "\(storePath).incoming"
        do {
            let bytes = try await SnapshotFetch.fetch(
                from: leader.replication, name: settings.name, context: try ZMQContext.shared(), to: path)
            let tail = try await BlockingWork.run { try SnapshotFetch.install(path, as: storePath) }
            logger.notice(
                "standby store replaced by the primary's snapshot (\(bytes) bytes, through record \(tail.position))")
        } catch {
            await BlockingWork.run { _ = unlink(path) }
            logger.error("cannot take the primary's snapshot: \(error)")
            // Asked again after a pause, rather than in a tight loop against a primary that cannot make one.
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// Opens the store and applies the primary's records until the role changes (`until`), the primary says the
    /// store needs a snapshot, or graceful shutdown; the store is closed again before it returns.
    private func takeRecords(
        from leader: ClusterMember, epoch: Int64, election: LeaderElection,
        until changed: @escaping @Sendable (ClusterRole) -> Bool
    ) async throws -> StandbyEnd {
        let configuration = configuration
        // As the primary's: written by its records alone (no jobs put back, no writer of its own).
        let store = try await BlockingWork.run {
            try RootStore.open(
                path: configuration.storePath, model: configuration.model, durability: .full,
                requeueLeftRunning: false)
        }
        let writer = StoreWriter(store: store, logger: logger, answersWaiting: {})
        let name = settings.name
        let snapshot = Mutex<String?>(nil)
        let state = StandbyState(cluster: settings.cluster, node: name, leader: leader, epoch: epoch)
        let group = Mutex<ServiceGroup?>(nil)
        let link = ReplicaLink(
            primary: leader.replication, name: name, context: try ZMQContext.shared(),
            hello: {
                let hello = try await store.replicationHello(name: name)
                state.began(at: hello.tail.position)
                return hello
            },
            apply: { records, epoch in
                let applied = try await writer.write(
                    StoreWrite<(ReplicationTail, ReplicationRefusal?)>.applyRecords(records, from: epoch))
                state.applied(through: applied.0.position)
                // Nobody answers a standby's writes: taken, so that they do not gather.
                _ = writer.takeAnswers()
                return applied
            },
            snapshotNeeded: { reason in
                snapshot.withLock { $0 = $0 ?? reason }
                guard let running = group.withLock({ $0 }) else { return }
                Task { await running.triggerGracefulShutdown() }
            }, logger: logger)
        // Clients that reach this node are told where the primary is.
        let router = StandbyRouter(
            configuration: configuration, primary: leader, epoch: epoch, name: name, logger: logger)
        let services = ServiceGroup(
            configuration: .init(
                services: ([writer.pipeline, writer, link, router] + standbyServices(state)).map {
                    .init(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        group.withLock { $0 = services }
        standing(.standby(leader: leader.name, epoch: epoch))
        logger.notice("standby of '\(leader.name)' (epoch \(epoch)), taking records from \(leader.replication)")
        let end = try await withThrowingTaskGroup(of: StandbyEnd?.self) { tasks in
            tasks.addTask {
                try await services.run()
                return nil
            }
            tasks.addTask {
                let next = await election.roles().first(where: changed)
                guard !Task.isCancelled else { return nil }
                await services.triggerGracefulShutdown()
                return .roleChanged(next)
            }
            var end: StandbyEnd?
            if case let ended?? = try await tasks.next() { end = ended }
            // The role changed (and the group stops) or the group stopped (a snapshot, or shutdown): both end.
            if end == nil { tasks.cancelAll() }
            for try await ended in tasks { if let ended { end = ended } }
            return end
        }
        do {
            try await BlockingWork.run { try store.close() }
        } catch {
            logger.error("cannot close the store", metadata: ["error": "\(error)"])
        }
        if let end { return end }
        if Task.isShuttingDownGracefully { return .stopped }
        if let reason = snapshot.withLock({ $0 }) { return .snapshotNeeded(reason) }
        return .stopped
    }
}

/// Why a standby stopped taking records.
private enum StandbyEnd: Sendable {
    /// The role changed; it is now this.
    case roleChanged(ClusterRole?)
    /// The primary cannot bring the store on from its last record, and why.
    case snapshotNeeded(String)
    /// Graceful shutdown, or the link stopped.
    case stopped
}
