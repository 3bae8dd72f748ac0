import Foundation
import Logging
import ZeroMQ

/// Composing the coordinator: the feed's socket, the store, the router's socket, then the writer and the readers
/// that answer through it, handed to the router as ``CoordinatorParts``.
extension CoordinatorService {
    /// Binds the feed, opens the store and binds the jobs/control ROUTER, in that order; what was made is closed
    /// again when a later step fails.
    /// - Throws: ``ModelError``/``StoreError`` when the store cannot be opened for the model, ``ZMQError`` when an
    ///   endpoint cannot be bound (for example, the port is taken).
    func makeServer(context: ZMQContext, admission: PeerAdmission?) async throws -> CoordinatorServer {
        let publisher = try FeedPublisher(configuration: configuration, context: context, logger: logger)
        let store: RootStore
        let io: RouterIO
        let activity = PeerActivity()
        do {
            // Opening the store runs SQLite (schema checks, migration, re-queueing): on a thread of its own.
            let configuration = configuration
            store = try await BlockingWork.run {
                try RootStore.open(path: configuration.storePath, model: configuration.model)
            }
        } catch {
            await publisher.stop()
            throw error
        }
        do {
            io = try RouterIO(configuration: configuration, context: context, activity: activity, logger: logger)
        } catch {
            await publisher.stop()
            await close(store)
            throw error
        }
        logOpening(store)
        let writer = StoreWriter(
            store: store, logger: logger, groupRows: configuration.commitRows,
            groupSeconds: configuration.commitSeconds
        ) {
            io.post(.written)
        }
        let readers = ReaderPool(
            store: store, limitPerPeer: configuration.limits.maximumPendingRequestsPerPeer, logger: logger
        ) { peer, requestID, body in
            io.reply(to: peer, requestID: requestID, body)
        }
        return CoordinatorServer(
            configuration: configuration, logger: logger,
            parts: CoordinatorParts(
                store: store, writer: writer, readers: readers, publisher: publisher, totals: CoordinatorTotals()),
            io: io, activity: activity, authorization: admission?.authorization)
    }

    /// Logs what opening the store did beyond opening it: an upgrade of its format, jobs a crash left running.
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
        for left in store.jobsLeftRunning {
            logger.notice(
                "jobs left running by the previous coordinator: their attempt counts as lost",
                metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
        }
    }
}
