import GRDB

/// Jobs a worker still runs when it registers anew: a cluster's new primary leases them to its new registration
/// rather than running them again (docs/failover.md, 'Jobs across a failover').
extension JobStore {
    /// A job attempt a worker says it still runs.
    struct HeldAttempt: Sendable, Equatable {
        let job: Int64
        let attempt: Int64
    }

    /// Leases each attempt to `worker` when the store still leases that job, under that attempt, to `previous` (the
    /// id the worker had): the attempt goes on, its committed batches and timeout as they were. An attempt the store
    /// voided meanwhile (handed back, failed, timed out, claimed again) is left as it is, and its saves are refused.
    /// - Returns: the jobs adopted.
    static func adoptJobs(
        _ held: [HeldAttempt], from previous: String, to worker: String, in db: Database,
        statements: WriterStatements
    ) throws -> [Int64] {
        guard !held.isEmpty, previous != worker else { return [] }
        let update = try statements.statement(
            db,
            """
            UPDATE tributary_jobs SET worker = ?1, updated_at = (julianday('now') - 2440587.5) * 86400.0
            WHERE id = ?2 AND attempt = ?3 AND worker = ?4 AND \(JobTransition.adopt.whereSQL)
            """)
        var adopted: [Int64] = []
        for attempt in held {
            update.bind(1, worker)
            update.bind(2, attempt.job)
            update.bind(3, attempt.attempt)
            update.bind(4, previous)
            try update.execute()
            if db.changesCount == 1 { adopted.append(attempt.job) }
        }
        return adopted
    }
}
