import Logging
import ServiceLifecycle

/// A new primary's jobs left running by the primaries before it: their workers, registering with it, take on the
/// attempts they still run (``WorkerSessions``, the `adopt` transition); once the adoption window has passed, those
/// not taken on go back to the queue, their attempts counting as lost, as a coordinator that restarts puts them back
/// on opening its store. So a job never runs on two workers at once across a failover: it goes back only when no
/// live worker said it runs it. Written through the writer, so that the standbys get it; waits (off the router) for
/// the stage to release it, then tells the router, and returns at graceful shutdown.
struct LeftRunningRequeue: Service {
    let writer: StoreWriter
    /// The epoch this primary leads under: the jobs whose worker ids carry it are its own.
    let epoch: Int64
    /// How long the workers have to take their jobs on (``ClusterSettings/jobAdoptionWindow``).
    let window: Duration
    let logger: Logger
    /// Tells the router that jobs were queued.
    let queued: @Sendable () -> Void

    func run() async throws {
        do {
            // A primary that stops meanwhile leaves them to the next, which gives their workers a window of its own.
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: window) }
            let write = try writer.queue(.requeueLeftRunning(grantedBefore: WorkerRegistry.idPrefix(epoch: epoch)))
            for left in try await write.value {
                logger.notice(
                    "jobs left running by the previous primary and taken on by no worker: their attempt counts as lost",
                    metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
            }
            queued()
        } catch is CancellationError {
            return
        } catch {
            logger.warning("the jobs left running by the previous primary were not put back: \(error)")
        }
        // Done, it serves on: a service of the coordinator's group that returns stops the group.
        try? await gracefulShutdown()
    }
}
