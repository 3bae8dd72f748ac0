import Foundation
import TributaryCore

/// Pushes, queued on the writer connection in the order ``StoreWriter`` hands them over.
extension GroupCommitter {
    /// Queues a push on the writer connection and returns at once: its jobs, their parents and the batch's
    /// callback in one transaction (``JobStore/pushJobs(_:batch:onComplete:now:in:)``), synced to the disk at every
    /// ``Durability`` level: a client told its jobs are queued does not lose them to a power loss.
    func queuePush(_ specs: [JobSpec], batch: String, onComplete: JobSpec? = nil)
        -> PendingWrite<Result<PushedJobs, any Error>>
    {
        let now = Date().timeIntervalSince1970
        let pending = PendingWrite<Result<PushedJobs, any Error>>()
        pool.asyncWriteWithoutTransaction { db in
            pending.fulfil(
                Result {
                    try writer.statements.transaction(db, synced: true) {
                        try jobs.pushJobs(specs, batch: batch, onComplete: onComplete, now: now, in: db)
                    }
                })
        }
        return pending
    }
}
