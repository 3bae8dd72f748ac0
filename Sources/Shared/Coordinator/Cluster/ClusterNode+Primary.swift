import Logging
import ServiceLifecycle
import Synchronization
import TributaryCluster

/// The primary's role: the coordinator serving, its commits held until the standbys in sync have them.
extension ClusterNode {
    /// Serves as primary under `epoch` until this node no longer leads under it (then it releases nothing more and
    /// abandons what it held) or graceful shutdown. Returns the role that ended it; nil at shutdown.
    /// - Parameter run: the how-many-th time this node serves under `epoch` (its role is taken again after a failed
    ///   service), which its worker ids carry from the second on.
    func lead(epoch: Int64, run: Int, election: LeaderElection, sync: ClusterSyncRecord)
        async throws -> ClusterRole?
    {
        // Who holds every commit acknowledged from now on: this node alone until standbys catch up. Written before
        // anything is acknowledged, so that a standby in sync with the previous primary, and not with this one,
        // cannot take over.
        let initial = SyncState(
            epoch: epoch, leader: settings.name, standbys: [], asynchronous: settings.asynchronous)
        do {
            guard try await sync.record(initial) else {
                logger.warning("not serving as primary of epoch \(epoch): the leader key is no longer this node's")
                try? await Task.sleep(for: .seconds(1))
                return election.role
            }
        } catch {
            logger.warning("not serving as primary of epoch \(epoch) yet: cannot record the sync state: \(error)")
            // Tried again while it leads.
            try? await Task.sleep(for: .seconds(1))
            return election.role
        }
        let keeper = SyncStateKeeper(record: sync, initial: initial, logger: logger)
        let held = Mutex(HeldParts())
        /// Stops what the stage holds from ever being acknowledged: now, or as soon as the parts exist.
        let abandon = { @Sendable (why: String) in
            let parts = held.withLock { held in
                held.abandoned = held.abandoned ?? why
                return held.parts
            }
            guard let (stage, pipeline) = parts else { return }
            stage.depose(why)
            pipeline.abandon()
        }
        let primary = PrimaryReplication(
            cluster: settings.cluster, node: settings.name, epoch: epoch, run: run, listen: settings.replicationListen,
            asynchronous: settings.asynchronous, jobAdoptionWindow: settings.jobAdoptionWindow,
            stillLeads: { election.leaderEpoch == epoch }, syncChanged: { keeper.syncChanged() },
            started: { stage, pipeline in
                keeper.attach(stage)
                let why = held.withLock { held in
                    held.parts = (stage, pipeline)
                    return held.abandoned
                }
                if let why { abandon(why) }
            })
        let (tell, serving) = (standing, ready)
        let coordinator = CoordinatorService(
            configuration: configuration, logger: logger, primary: primary, services: services
        ) { server in
            tell(.primary(epoch: epoch))
            serving(server)
        }
        let group = ServiceGroup(
            configuration: .init(
                services: ([coordinator, keeper] as [any Service]).map {
                    .init(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        let grace = configuration.drainGracePeriod + .seconds(5)
        let next = try await withThrowingTaskGroup(of: PrimaryEnd.self) { tasks in
            tasks.addTask {
                try await group.run()
                return .stopped
            }
            tasks.addTask {
                let next = await election.roles().first { $0 != .leader(epoch: epoch) }
                guard !Task.isCancelled else { return .gaveUp }
                abandon("this node no longer leads under epoch \(epoch)")
                await group.triggerGracefulShutdown()
                return .roleChanged(next)
            }
            tasks.addTask {
                // A primary that stops drains as a coordinator does; what no standby acknowledged by the end of the
                // drain is abandoned, so that the stop ends with no standby.
                try? await gracefulShutdown()
                try? await Task.sleep(for: grace)
                guard !Task.isCancelled else { return .gaveUp }
                abandon("this node stopped")
                return .gaveUp
            }
            var next: ClusterRole?
            while let ended = try await tasks.next() {
                switch ended {
                case .stopped: tasks.cancelAll()
                case .roleChanged(let role): next = role
                case .gaveUp: break
                }
            }
            return next
        }
        standing(.deposed(epoch: epoch))
        return Task.isShuttingDownGracefully ? nil : next ?? election.role
    }
}

/// The primary's parts a lost leadership stops, once they exist, and why it was lost if it was before.
private struct HeldParts {
    var parts: (stage: ReplicationStage, pipeline: CommitPipeline)?
    var abandoned: String?
}

/// How one of the primary role's tasks ended.
private enum PrimaryEnd: Sendable {
    /// The coordinator stopped.
    case stopped
    /// The node no longer leads under the epoch; it is now this.
    case roleChanged(ClusterRole?)
    /// Cancelled, or gave up what no standby acknowledged.
    case gaveUp
}
