import Logging
import ServiceLifecycle

/// A new primary's jobs left running by the primaries before it: their workers, registering with it, take on the
/// attempts they still run (``WorkerSessions``, the `adopt` transition); once the adoption window has passed, those
/// not taken on go back to the queue, their attempts counting as lost, as a coordinator that restarts puts them back
/// on opening its store. So a job never runs on two workers at once across a failover: it goes back only when no
/// live worker said it runs it. Written through the writer, so that the standbys get it, and tried again each second
/// until the store takes it; waits (off the router) for the stage to release it, then tells the router, and returns
/// at graceful shutdown.
struct LeftRunningRequeue: Service {
    let writer: StoreWriter
    /// What the worker ids this primary grants start with (``PrimaryReplication/workerIDPrefix``): the jobs whose
    /// ids do are its own.
    let workerIDPrefix: String
    /// How long the workers have to take their jobs on (``ClusterSettings/jobAdoptionWindow``).
    let window: Duration
    let logger: Logger
    /// Tells the router that jobs were queued.
    let queued: @Sendable () -> Void

    func run() async throws {
        // A primary that stops meanwhile leaves them to the next, which gives their workers a window of its own.
        var wait = window
        while true {
            let pause = wait
            guard (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: pause) })) != nil else { break }
            do {
                let write = try writer.queue(.requeueLeftRunning(grantedBefore: workerIDPrefix))
                for left in try await write.value {
                    logger.notice(
                        "jobs left running by the previous primary and taken on by no worker: their attempt counts as lost",
                        metadata: ["batch": "\(left.batch)", "requeued": "\(left.requeued)", "dead": "\(left.dead)"])
                }
                queued()
                break
            } catch is WriterStoppedError, is WriteAbandonedError {
                break  // The primary stops: the next puts them back.
            } catch {
                logger.warning("the jobs left running by the previous primary were not put back yet: \(error)")
                wait = .seconds(1)
            }
        }
        // Done, it serves on: a service of the coordinator's group that returns stops the group.
        try? await gracefulShutdown()
    }
}
