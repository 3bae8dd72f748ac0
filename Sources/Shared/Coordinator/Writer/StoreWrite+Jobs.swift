import Foundation
import TributaryCore

/// The job engine's writes (``JobStore``), as cases of the writer's queue.
extension StoreWrite {
    /// A worker's failed attempt, if it still holds its job: retried after its delay, or dead; with the job's
    /// progress as the write left it, for the feed, when it goes back to the queue (a death's is in its endings).
    static func failAttempt(
        job id: Int64, attempt: Int, worker: String, message: String, permanent: Bool
    ) -> StoreWrite<(failed: FailedAttempt, requeued: JobProgress?)?> {
        .init(name: "fail attempt") { store, db in
            guard
                let failed = try store.jobs.failJob(
                    id: id, attempt: attempt, worker: worker, message: message, permanent: permanent, in: db)
            else { return nil }
            let progress = failed.outcome == .dead ? nil : try JobStore.progress(ofJobs: [id], in: db).first
            return (failed, progress)
        }
    }

    /// A lost worker's running jobs back to the queue, the attempts of those it `started` counting as failed.
    static func requeueJobs(of worker: String, started: Set<Int64>?, reason: String)
        -> StoreWrite<(requeued: Int, failed: [FailedAttempt])>
    {
        .init(name: "requeue jobs") { store, db in
            try store.jobs.requeueJobsNamingFailed(of: worker, started: started, reason: reason, in: db)
        }
    }

    /// A worker's running jobs back to the queue without counting their attempts.
    static func releaseJobs(of worker: String) -> StoreWrite<[Int64]> {
        .init(name: "release jobs") { store, db in try store.jobs.releaseJobsNamingThem(of: worker, in: db) }
    }

    /// Every running job back to the queue without counting its attempt (a graceful stop).
    static func releaseAllRunningJobs() -> StoreWrite<Int> {
        .init(name: "release all running jobs") { store, db in try store.jobs.releaseAllRunningJobs(in: db) }
    }

    /// The jobs a previous primary left running and no worker adopted back to the queue, their attempts counting as
    /// lost (what opening a store does for a coordinator that runs alone): those whose worker id does not start with
    /// `prefix`, the one this primary grants (``PrimaryReplication/workerIDPrefix``).
    static func requeueLeftRunning(grantedBefore prefix: String) -> StoreWrite<[JobsLeftRunning]> {
        .init(name: "requeue jobs left running", synced: true) { _, db in
            try JobStore.requeueAfterRestart(db, sparing: prefix)
        }
    }

    /// Running attempts a worker that registered anew still runs, leased to its new id `worker`
    /// (``JobStore/adoptJobs(_:from:grantedBefore:to:in:statements:)``).
    static func adoptJobs(
        _ held: [JobStore.HeldAttempt], from previous: [String], grantedBefore prefix: String, to worker: String
    ) -> StoreWrite<[Int64]> {
        .init(name: "adopt jobs") { store, db in
            try JobStore.adoptJobs(
                held, from: previous, grantedBefore: prefix, to: worker, in: db, statements: store.writer.statements)
        }
    }

    /// A dead job back in the queue.
    static func retryJob(id: Int64) -> StoreWrite<(job: JobInfo, settled: [JobEnding])?> {
        .init(name: "retry job", synced: true) { store, db in try store.jobs.retryJob(id: id, in: db) }
    }

    /// A waiting, queued or running job cancelled.
    static func cancelJob(id: Int64) -> StoreWrite<(before: JobInfo, endings: [JobEnding])?> {
        .init(name: "cancel job", synced: true) { store, db in try store.jobs.cancelJob(id: id, in: db) }
    }

    /// A finished job deleted with its payload.
    static func deleteJob(id: Int64) -> StoreWrite<JobInfo?> {
        .init(name: "delete job", synced: true) { store, db in try store.jobs.deleteJob(id: id, in: db) }
    }

    /// Finished jobs last changed before `cutoff` deleted, at most `limit` of them.
    static func pruneFinishedJobs(before cutoff: Date, limit: Int) -> StoreWrite<Int> {
        .init(name: "prune finished jobs") { store, db in
            try store.jobs.pruneFinishedJobs(before: cutoff, limit: limit, in: db)
        }
    }

    /// Attempts that outlived their job's timeout failed.
    static func failTimedOutAttempts(now: Date = Date()) -> StoreWrite<[JobStore.TimedOutAttempt]> {
        .init(name: "fail timed-out attempts") { store, db in try store.jobs.failTimedOutAttempts(now: now, in: db) }
    }

    /// A schedule added, or replaced.
    static func putSchedule(_ spec: ScheduleSpec, replace: Bool) -> StoreWrite<ScheduleInfo> {
        .init(name: "put schedule", synced: true) { store, db in
            try store.jobs.putSchedule(spec, replace: replace, in: db)
        }
    }

    /// A schedule paused or resumed.
    static func setSchedule(_ name: String, paused: Bool) -> StoreWrite<ScheduleInfo?> {
        .init(name: paused ? "pause schedule" : "resume schedule", synced: true) { store, db in
            try store.jobs.setSchedule(name, paused: paused, in: db)
        }
    }

    /// A named queue paused or resumed; whether that changed anything.
    static func setQueue(_ name: String, paused: Bool) -> StoreWrite<Bool> {
        .init(name: paused ? "pause queue" : "resume queue", synced: true) { store, db in
            try store.jobs.setQueue(name, paused: paused, in: db)
        }
    }

    /// A schedule deleted.
    static func deleteSchedule(_ name: String) -> StoreWrite<ScheduleInfo?> {
        .init(name: "delete schedule", synced: true) { store, db in try store.jobs.deleteSchedule(name, in: db) }
    }

    /// The due ticks of every active schedule fired.
    static func fireDueSchedules(now: Double, catchingUp: Bool) -> StoreWrite<JobStore.FiredTicks> {
        .init(name: "fire due schedules") { store, db in
            try store.jobs.fireDueSchedules(now: now, catchingUp: catchingUp, in: db)
        }
    }
}
