import GRDB

/// The job engine's statements, as Oban's engine owns every job statement: pushing, claiming, completing, failing,
/// retrying, cancelling and deleting jobs, their dependencies, batch callbacks, schedules, limits, counts and
/// inspection. Nothing else reads or writes the job tables (`tributary_jobs`, `tributary_payloads`,
/// `tributary_batches`, `tributary_job_parents`, `tributary_batch_parents`, `tributary_schedules`,
/// `tributary_paused_queues`).
///
/// Reads run on the store's reader connections; writes on its writer connection, in transactions of their own or
/// inside a group commit's (the `…(in: db)` functions, which `GroupCommitter` calls).
///
/// ```swift
/// let store = try RootStore.open(path: "store.sqlite", model: model)
/// let nightly = try await store.jobs.batchStatus("nightly")
/// print("\(nightly.doneJobs) of \(nightly.totalJobs) jobs done")
/// ```
public struct JobStore: Sendable {
    package let pool: DatabasePool
    package let writer: WriterState

    init(pool: DatabasePool, writer: WriterState) {
        self.pool = pool
        self.writer = writer
    }
}
