import GRDB

/// Jobs a worker still runs when it registers anew: a cluster's new primary leases them to its new registration
/// rather than running them again (docs/failover.md, 'Jobs across a failover').
extension JobStore {
    /// A job attempt a worker says it still runs.
    struct HeldAttempt: Sendable, Equatable {
        let job: Int64
        let attempt: Int64
    }

    /// Leases each attempt to `worker` where the store still leases that job, under that attempt, to one of the ids
    /// in `previous` (the id the worker names, its peer's earlier registration), or to a worker an earlier primary
    /// granted it to (an id that does not start with `prefix`, this primary's; a coordinator alone, whose `prefix` is
    /// empty, has none). A job's attempt numbers are never given twice, so `(job, attempt)` names the one run that
    /// attempt is, across primaries: an adopted attempt goes on, its committed batches and timeout as they were. An
    /// attempt the store voided meanwhile (handed back, failed, timed out, claimed again) is left as it is, and its
    /// saves are refused.
    /// - Returns: the jobs adopted.
    static func adoptJobs(
        _ held: [HeldAttempt], from previous: [String], grantedBefore prefix: String, to worker: String,
        in db: Database, statements: WriterStatements
    ) throws -> [Int64] {
        guard !held.isEmpty, let named = previous.first else { return [] }
        let earlier = previous.dropFirst().first ?? named
        let update = try statements.statement(
            db,
            """
            UPDATE tributary_jobs SET worker = ?1, updated_at = (julianday('now') - 2440587.5) * 86400.0
            WHERE id = ?2 AND attempt = ?3 AND \(JobTransition.adopt.whereSQL) AND worker <> ?1
                AND (worker IN (?4, ?5) OR (?6 <> '' AND substr(worker, 1, length(?6)) <> ?6))
            """)
        var adopted: [Int64] = []
        for attempt in held {
            update.bind(1, worker)
            update.bind(2, attempt.job)
            update.bind(3, attempt.attempt)
            update.bind(4, named)
            update.bind(5, earlier)
            update.bind(6, prefix)
            try update.execute()
            if db.changesCount == 1 { adopted.append(attempt.job) }
        }
        return adopted
    }
}
