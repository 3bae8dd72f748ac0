import Foundation
import Logging
import TributaryCore
import ZeroMQ

/// Composing the coordinator: the feed's socket, the router's socket (one loop runs both), the store, then the writer and the readers
/// that answer through it, handed to the router as ``CoordinatorParts``.
extension CoordinatorService {
    /// Binds the feed and the jobs/control ROUTER, then opens the store: an endpoint that cannot be bound refuses the
    /// start before the store is touched (opening it may upgrade its format and re-queue jobs a crash left running).
    /// What was made is closed again when a later step fails.
    /// - Throws: ``ZMQError`` when an endpoint cannot be bound (for example, the port is taken), ``ModelError``/
    ///   ``StoreError`` when the store cannot be opened for the model.
    func makeServer(context: ZMQContext, admission: PeerAdmission?) async throws -> CoordinatorServer {
        let feed = try FeedSocket(configuration: configuration, context: context)
        let activity = PeerActivity()
        let io: RouterIO
        do {
            io = try RouterIO(
                configuration: configuration, context: context, feed: feed, activity: activity, logger: logger)
        } catch {
            feed.close()
            throw error
        }
        let publisher = FeedPublisher(feed, loop: io.loop, socket: RouterIO.feedSocket, configuration: configuration)
        let store: RootStore
        do {
            // Opening the store runs SQLite (schema checks, migration, re-queueing): on a thread of its own.
            let configuration = configuration
            store = try await BlockingWork.run {
                try RootStore.open(
                    path: configuration.storePath, model: configuration.model, durability: configuration.durability,
                    requeueLeftRunning: configuration.cluster == nil)
            }
        } catch {
            await io.loop.stop()
            await publisher.stop()
            throw error
        }
        logOpening(store)
        var stages: [any CommitStage] = []
        var stage: ReplicationStage?
        if let primary {
            do {
                stage = try await primary.start(on: store, context: context, logger: logger)
            } catch {
                await io.loop.stop()
                await publisher.stop()
                await close(store)
                throw error
            }
            stages = stage.map { [$0] } ?? []
        }
        let writer = StoreWriter(
            store: store, logger: logger, groupRows: configuration.commitRows,
            groupSeconds: configuration.commitSeconds, stages: stages
        ) {
            io.post(.written)
        }
        if let primary, let stage { primary.started(stage, writer.pipeline) }
        let readers = ReaderPool(
            store: store, limitPerPeer: configuration.limits.maximumPendingRequestsPerPeer, logger: logger
        ) { peer, requestID, body in
            io.reply(to: peer, requestID: requestID, body)
        }
        let snapshot = RouterSnapshot()
        var cluster: (@Sendable () -> ClusterStatus)?
        if let primary, let stage {
            let pipeline = writer.pipeline
            cluster = { primary.status(of: stage, pipeline: pipeline) }
        }
        let handlers = CoordinatorHandlers(
            HandlerParts(
                store: store, writer: writer, readers: readers, configuration: configuration, snapshot: snapshot,
                logger: logger, tell: { io.post(.jobsChanged($0)) }, cluster: cluster))
        return CoordinatorServer(
            configuration: configuration, logger: logger,
            parts: CoordinatorParts(
                store: store, writer: writer, readers: readers, publisher: publisher, totals: CoordinatorTotals(),
                snapshot: snapshot, handlers: handlers),
            io: io, activity: activity, authorization: admission?.authorization,
            workerIDPrefix: primary?.workerIDPrefix ?? "")
    }

    /// Logs what opening the store did beyond opening it: an upgrade of its format, the model's indexes created or
    /// dropped, jobs a crash left running.
    private func logOpening(_ store: RootStore) {
        if let upgrade = store.upgrade {
            logger.notice(
                "store upgraded to format \(Schema.format)",
                metadata: [
                    "from": "\(upgrade.fromFormat)", "objects": "\(upgrade.objects)",
                    "references": "\(upgrade.references)",
                    "dangling_cleared": "\(upgrade.danglingReferencesCleared)",
                    "seconds": "\(String(format: "%.2f", upgrade.duration.seconds))",
                ])
        }
        for name in store.declaredIndexes.created {
            logger.notice("index created, as the model declares it", metadata: ["index": "\(name)"])
        }
        for name in store.declaredIndexes.dropped {
            logger.notice("index dropped: the model no longer declares it", metadata: ["index": "\(name)"])
        }
        for left in store.jobsLeftRunning {
            logger.notice(
                "jobs left running by the previous coordinator: their attempt counts as lost",
                metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
        }
    }
}
