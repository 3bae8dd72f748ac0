import Foundation
import Logging
import ServiceLifecycle
import TributaryCluster
import ZeroMQ

/// The standby's role: the store taking the primary's records.
extension ClusterNode {
    /// Applies the records of `leader`, the primary of `epoch`, until this node leads or another primary is named,
    /// or graceful shutdown. Returns the role that ended it; nil at shutdown.
    func follow(_ leader: ClusterMember, epoch: Int64, roles: AsyncStream<ClusterRole>) async throws -> ClusterRole? {
        let configuration = configuration
        // As the primary's: written by its records alone (no jobs put back, no writer of its own).
        let store = try await BlockingWork.run {
            try RootStore.open(
                path: configuration.storePath, model: configuration.model, durability: .full,
                requeueLeftRunning: false)
        }
        let writer = StoreWriter(store: store, logger: logger, answersWaiting: {})
        let name = settings.name
        let link = ReplicaLink(
            primary: leader.replication, name: name, context: try ZMQContext.shared(),
            hello: { try await store.replicationHello(name: name) },
            apply: { records, epoch in
                let applied = try await writer.write(
                    StoreWrite<(ReplicationTail, ReplicationRefusal?)>.applyRecords(records, from: epoch))
                // Nobody answers a standby's writes: taken, so that they do not gather.
                _ = writer.takeAnswers()
                return applied
            }, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: ([writer.pipeline, writer, link] as [any Service]).map {
                    .init(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        standing(.standby(leader: leader.name, epoch: epoch))
        logger.notice(
            "standby of '\(leader.name)' (epoch \(epoch)), taking records from \(leader.replication)")
        let next = try await withThrowingTaskGroup(of: ClusterRole?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            tasks.addTask {
                // A primary of another epoch, or this node's turn; a leader key that vanished is no reason to stop.
                let next = await roles.first { role in
                    switch role {
                    case .leader: true
                    case .follower(let other?, let otherEpoch): other.name != leader.name || otherEpoch != epoch
                    case .follower(nil, _): false
                    }
                }
                guard !Task.isCancelled else { return nil }
                await group.triggerGracefulShutdown()
                return next
            }
            var next: ClusterRole?
            if case let ended?? = try await tasks.next() { next = ended }
            // Either the role changed (and the group is stopping) or the group stopped (shutdown): wait for both.
            if next == nil { tasks.cancelAll() }
            for try await ended in tasks { if let ended { next = ended } }
            return next
        }
        do {
            try await BlockingWork.run { try store.close() }
        } catch {
            logger.error("cannot close the store", metadata: ["error": "\(error)"])
        }
        return Task.isShuttingDownGracefully ? nil : next
    }
}
