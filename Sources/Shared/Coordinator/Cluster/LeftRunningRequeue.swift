import Logging
import ServiceLifecycle

/// A new primary's first write: the jobs the one before it left running go back to the queue, their attempts
/// counting as lost, as a coordinator that restarts puts them back on opening its store. Written through the
/// writer, so that the standbys get it; waits (off the router) for the stage to release it, then tells the router, and returns at graceful shutdown.
struct LeftRunningRequeue: Service {
    let write: QueuedOperation<[JobsLeftRunning]>
    let logger: Logger
    /// Tells the router that jobs were queued.
    let queued: @Sendable () -> Void

    func run() async throws {
        do {
            for left in try await write.value {
                logger.notice(
                    "jobs left running by the previous primary: their attempt counts as lost",
                    metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
            }
            queued()
        } catch {
            logger.warning("the jobs left running by the previous primary were not put back: \(error)")
        }
        // Done, it serves on: a service of the coordinator's group that returns stops the group.
        try? await gracefulShutdown()
    }
}
