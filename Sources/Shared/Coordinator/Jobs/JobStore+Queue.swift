import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// What a failed attempt did to its job.
public enum JobFailureOutcome: Sendable, Equatable {
    /// Queued again, to run no earlier than this.
    case retrying(at: Date)
    /// Dead: kept with its error history, not run again.
    case dead
}

/// A failed attempt as the store recorded it: what became of its job, and every job that ended of it.
public struct FailedAttempt: Sendable, Equatable {
    /// The job's id.
    public let id: Int64
    /// The job's kind.
    public let kind: String
    /// The attempt that failed.
    public let attempt: Int
    /// What became of the job: queued again after a delay, or dead.
    public let outcome: JobFailureOutcome
    /// When it died: the job itself, then the jobs waiting for it that its death settled (dead or cancelled).
    public let endings: [JobEnding]
}

/// The jobs of one batch that a previous coordinator left running, as the store found them when it opened.
public struct JobsLeftRunning: Sendable, Equatable {
    /// The batch they belong to.
    public let batch: String
    /// How many went back to the queue.
    public var requeued = 0
    /// How many died instead: that lost attempt was their last.
    public var dead = 0

    init(batch: String, requeued: Int = 0, dead: Int = 0) {
        self.batch = batch
        self.requeued = requeued
        self.dead = dead
    }

    mutating func count(_ outcome: JobFailureOutcome) {
        if case .dead = outcome { dead += 1 } else { requeued += 1 }
    }
}

/// What a push did: an id per pushed job (for a duplicate, the id of the job that has its unique key), and the
/// indexes of the jobs that were not enqueued because of that job.
public struct PushedJobs: Sendable, Equatable {
    /// An id per pushed job, in the order pushed (a duplicate's is that of the job holding its unique key).
    public var ids: [Int64] = []
    /// The indexes, in the push, of the jobs not enqueued because another job holds their unique key.
    public var duplicates: [Int] = []
    /// Pushed jobs that a failed parent settled at once (dead or cancelled).
    public var settled: [JobEnding] = []
}

/// A job the queue handed to a worker.
public struct ClaimedJob: Sendable {
    /// The job's id.
    public let id: Int64
    /// The attempt the worker runs (its saves name it, so a late save of an earlier attempt is refused).
    public let attempt: Int
    /// What to run: the job's spec, payload included.
    public var spec: JobSpec
    /// How many of its batches earlier attempts committed: the worker resumes after them.
    public let committedBatches: Int
    /// When it was last due (pushed, queued again, or its `run_at`), in seconds since 1970: its wait in the queue
    /// ends now.
    public let dueAt: Double
}

/// Jobs to lease to a worker: up to `limit` queued jobs of `kinds`, from the first of `queues` that has any due,
/// then the next; in each queue by priority, then oldest first.
public struct ClaimRequest: Sendable {
    /// The id of the worker the jobs are leased to.
    public let worker: String
    /// The job kinds the worker runs.
    public let kinds: [String]
    /// The queues the worker takes from, in order.
    public let queues: [String]
    /// The most jobs to lease.
    public var limit: Int
    /// The concurrency limits the claim keeps to.
    public var runLimits: RunLimits

    /// A claim of up to `limit` jobs of `kinds` for `worker`, from `queues` in order, within `runLimits`.
    public init(
        worker: String, kinds: [String], queues: [String] = [JobQueue.defaultName], limit: Int,
        runLimits: RunLimits = RunLimits()
    ) {
        self.worker = worker
        self.kinds = kinds
        self.queues = queues
        self.limit = limit
        self.runLimits = runLimits
    }

    /// The same claim without the queues of `excluded` (those paused).
    func leavingOut(_ excluded: Set<String>) -> ClaimRequest {
        ClaimRequest(
            worker: worker, kinds: kinds, queues: queues.filter { !excluded.contains($0) }, limit: limit,
            runLimits: runLimits)
    }
}

extension JobStore {
    /// Enqueues jobs durably, in the writer's open transaction.
    /// - Returns: their ids, in order.
    func pushJobs(_ specs: [JobSpec], batch: String, onComplete: JobSpec? = nil, now: Double, in db: Database) throws
        -> PushedJobs
    {
        let statements = writer.statements
        let insert = try statements.statement(
            db,
            """
            INSERT INTO tributary_jobs (batch, kind, arguments, total, created_at, updated_at,
                max_attempts, backoff_base_ms, backoff_cap_ms, priority, run_at, unique_key, timeout_ms, queue,
                state, on_parent_failure)
            VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
            """)
        let insertPayload = try statements.statement(
            db, "INSERT INTO tributary_payloads (job_id, payload) VALUES (?, ?)")
        let findUnique = try statements.statement(
            db,
            "SELECT id FROM tributary_jobs WHERE unique_key = ? AND state IN (\(JobState.liveSQL))")
        var pushed = PushedJobs()
        pushed.ids.reserveCapacity(specs.count)
        var enqueuedJobs = 0
        var enqueuedRows: Int64 = 0
        var waiting: [Int64] = []
        for (index, spec) in specs.enumerated() {
            if let uniqueKey = spec.uniqueKey, !uniqueKey.isEmpty {
                findUnique.bind(1, uniqueKey)
                defer { findUnique.reset() }
                if try findUnique.step() {
                    pushed.ids.append(findUnique.int64(column: 0))
                    pushed.duplicates.append(index)
                    continue
                }
            }
            let policy = RetryPolicy(spec)
            insert.bind(1, batch)
            insert.bind(2, spec.kind)
            insert.bind(3, Self.encodeArguments(spec.arguments))
            insert.bind(4, Int64(spec.total))
            insert.bind(5, now)
            insert.bind(6, Int64(policy.maxAttempts))
            insert.bind(7, policy.base.wholeMilliseconds)
            insert.bind(8, policy.cap.wholeMilliseconds)
            insert.bind(9, Int64(spec.priority))
            insert.bind(10, spec.runAt?.timeIntervalSince1970 ?? 0)
            insert.bind(11, spec.uniqueKey?.isEmpty == false ? spec.uniqueKey : nil)
            insert.bind(12, spec.timeout?.wholeMilliseconds ?? 0)
            insert.bind(13, spec.queue)
            insert.bind(14, (spec.hasParents ? JobState.waiting : .queued).rawValue)
            if spec.hasParents { insert.bind(15, spec.onParentFailure.rawValue) } else { insert.bindNull(15) }
            try insert.execute()
            let id = db.lastInsertedRowID
            if spec.hasParents {
                try Self.recordParents(of: spec, id: id, batch: batch, index: index, pushedIDs: pushed.ids, in: db)
                waiting.append(id)
            }
            if !spec.payload.isEmpty {
                insertPayload.bind(1, id)
                insertPayload.bind(2, bytes: spec.payload)
                try insertPayload.execute()
            }
            pushed.ids.append(id)
            enqueuedJobs += 1
            enqueuedRows = enqueuedRows.addingReportingOverflow(Int64(clamping: spec.total)).partialValue
        }
        try db.execute(
            sql: """
                INSERT INTO tributary_batches (batch, total_jobs, total_rows) VALUES (?, ?, ?)
                ON CONFLICT (batch) DO UPDATE SET total_jobs = total_jobs + excluded.total_jobs,
                    total_rows = \(SQLText.clampedAdd("total_rows", "excluded.total_rows"))
                """,
            arguments: [batch, enqueuedJobs, enqueuedRows])
        // Children whose parents are done already go to the queue at once; those with a failed parent settle.
        pushed.settled = try Self.settle(waiting.reversed(), now: now, in: db)
        if let onComplete {
            try Self.setCallback(onComplete, ofBatch: batch, in: db)
            // A push of nothing new (every job a duplicate) may leave the batch finished already.
            pushed.settled += try Self.finished(jobs: [], batches: [batch], now: now, in: db)
        }
        return pushed
    }

    /// The claim inside the writer's open transaction, through raw statements (the dispatch hot path): per queue,
    /// in the worker's order, the jobs read from the queued index of the queue, then each leased by its id. (One
    /// `UPDATE … WHERE id IN (SELECT …) RETURNING …` builds two temporary b-trees on every run, the subquery's ids
    /// and the returned rows, which cost more than these statements for a claim of a few jobs.)
    func claimJobs(
        for worker: String, kinds: [String], queues: [String], limit: Int, runLimits: RunLimits = RunLimits(),
        in db: Database
    ) throws -> [ClaimedJob] {
        guard !kinds.isEmpty, !queues.isEmpty, limit > 0 else { return [] }
        let now = Date().timeIntervalSince1970
        if runLimits.concern(kinds: kinds, queues: queues) {
            return try claimJobsWithinLimits(
                for: worker, kinds: kinds, queues: queues, limit: limit, runLimits: runLimits, now: now, in: db)
        }
        let statements = writer.statements
        // One statement per number of kinds (a worker runs a handful), so the cache stays small.
        let read = try statements.statement(
            db,
            """
            SELECT \(Self.leasedColumnsSQL) FROM tributary_jobs WHERE state = \(JobState.queued.sql) AND queue = ?3 AND run_at <= ?1
                AND kind IN (\(SQLText.placeholders(kinds.count, from: 4))) ORDER BY priority DESC, id LIMIT ?2
            """)
        var jobs: [ClaimedJob] = []
        for queue in queues where jobs.count < limit {
            read.bind(1, now)
            read.bind(2, Int64(limit - jobs.count))
            read.bind(3, queue)
            for (offset, kind) in kinds.enumerated() { read.bind(Int32(4 + offset), kind) }
            defer { read.reset() }
            while try read.step() { jobs.append(Self.leasedJob(read)) }
        }
        return try withPayloads(try lease(jobs, to: worker, now: now, in: db), in: db)
    }

    /// Leases jobs read as queued (``leasedColumnsSQL``) to `worker`, one statement each by id.
    /// - Returns: those leased: each, as they were read in this transaction, which only this writer writes.
    private func lease(_ jobs: [ClaimedJob], to worker: String, now: Double, in db: Database) throws -> [ClaimedJob] {
        let lease = try writer.statements.statement(
            db,
            """
            UPDATE tributary_jobs SET state = \(JobTransition.claim.sql(entering: .running)), attempt = attempt + 1,
                worker = ?1, leased_at = ?2
            WHERE id = ?3 AND \(JobTransition.claim.whereSQL)
            """)
        return try jobs.filter { job in
            lease.bind(1, worker)
            lease.bind(2, now)
            lease.bind(3, job.id)
            try lease.execute()
            return lease.changes == 1
        }
    }

    /// How many due jobs of `kinds` in `queues` are queued, counted up to `cap` (concurrency and rate limits not
    /// considered): what a claim for them could take at most.
    func readyJobs(kinds: [String], queues: [String], upTo cap: Int, in db: Database) throws -> Int {
        guard !kinds.isEmpty, !queues.isEmpty, cap > 0 else { return 0 }
        let count = try writer.statements.statement(
            db,
            """
            SELECT count(*) FROM (SELECT 1 FROM tributary_jobs WHERE state = \(JobState.queued.sql) AND run_at <= ?2
                AND queue IN (\(SQLText.placeholders(queues.count, from: 3)))
                AND kind IN (\(SQLText.placeholders(kinds.count, from: 3 + queues.count))) LIMIT ?1)
            """)
        count.bind(1, Int64(cap))
        count.bind(2, Date().timeIntervalSince1970)
        for (offset, queue) in queues.enumerated() { count.bind(Int32(3 + offset), queue) }
        for (offset, kind) in kinds.enumerated() { count.bind(Int32(3 + queues.count + offset), kind) }
        defer { count.reset() }
        return try count.step() ? Int(count.int64(column: 0)) : 0
    }

    /// A queued job as its lease makes it, read by ``leasedJob(_:)`` before the lease: the attempt the lease starts,
    /// and when the job was last queued (the lease leaves `updated_at` as it was).
    private static let leasedColumnsSQL =
        "id, attempt + 1, kind, arguments, total, committed_batches, MAX(created_at, run_at, updated_at), queue"

    /// The job of a row of ``leasedColumnsSQL`` (without its payload).
    private static func leasedJob(_ row: SQLiteStatement) -> ClaimedJob {
        let spec = JobSpec(
            kind: row.text(column: 2) ?? "", arguments: decodeArguments(row.text(column: 3) ?? "{}"),
            total: UInt64(max(0, row.int64(column: 4))), queue: row.text(column: 7) ?? JobQueue.defaultName)
        return ClaimedJob(
            id: row.int64(column: 0), attempt: Int(row.int64(column: 1)), spec: spec,
            committedBatches: Int(row.int64(column: 5)), dueAt: row.double(column: 6))
    }

    /// The claimed jobs sorted by id, with their payloads read.
    private func withPayloads(_ claimed: [ClaimedJob], in db: Database) throws -> [ClaimedJob] {
        var jobs = claimed
        let statements = writer.statements
        jobs.sort { $0.id < $1.id }
        let payload = try statements.statement(db, "SELECT payload FROM tributary_payloads WHERE job_id = ?")
        for index in try Self.indexesWithPayload(jobs, in: db, statements: statements) {
            payload.bind(1, jobs[index].id)
            defer { payload.reset() }
            if try payload.step() { jobs[index].spec.payload = payload.data(column: 0) }
        }
        return jobs
    }

    /// A claim that keeps to concurrency limits: per queue, in the worker's order, the kinds and queues already at
    /// their limits are left out, and the candidates are read in the queue's order (priority, then age) until the
    /// claim is full, skipping those of a kind whose limit the claim has reached, and those whose argument value is
    /// at a per-argument limit (``ArgumentLimitRoom``). At most
    /// ``limitedClaimScan`` candidates are read per queue, so a deep run of jobs that must wait costs a bounded read.
    private func claimJobsWithinLimits(
        for worker: String, kinds: [String], queues: [String], limit: Int, runLimits: RunLimits, now: Double,
        in db: Database
    ) throws -> [ClaimedJob] {
        let statements = writer.statements
        var runningByKind: [String: Int] = [:]
        var runningByQueue: [String: Int] = [:]
        let running = try statements.statement(
            db,
            Self.runningCountsSQL
        )
        if !runLimits.byKind.isEmpty || !runLimits.byQueue.isEmpty {
            defer { running.reset() }
            while try running.step() {
                let count = Int(running.int64(column: 2))
                runningByKind[running.text(column: 0) ?? "", default: 0] += count
                runningByQueue[running.text(column: 1) ?? "", default: 0] += count
            }
        }
        // What rate limits leave for this claim: starts in the window so far, by kind and by queue.
        let starts = writer.recentStarts
        var rateRoomByKind: [String: Int] = [:]
        for kind in kinds {
            guard let rate = runLimits.rateByKind[kind] else { continue }
            rateRoomByKind[kind] = try starts.room(
                "kind:\(kind)", column: "kind", value: kind, rate: rate, now: now, in: db)
        }
        func room(kind: String) -> Int {
            min(
                runLimits.byKind[kind].map { $0 - runningByKind[kind, default: 0] } ?? .max,
                rateRoomByKind[kind] ?? .max)
        }
        var argumentRoom = try ArgumentLimitRoom(runLimits.perArgument(kinds: kinds, queues: queues), in: db)
        var chosen: [Int64] = []
        for queue in queues where chosen.count < limit {
            var queueRoom = runLimits.byQueue[queue].map { $0 - runningByQueue[queue, default: 0] } ?? .max
            if let rate = runLimits.rateByQueue[queue] {
                queueRoom = min(
                    queueRoom,
                    try starts.room("queue:\(queue)", column: "queue", value: queue, rate: rate, now: now, in: db))
            }
            let eligible = kinds.filter { room(kind: $0) > 0 }
            guard queueRoom > 0, !eligible.isEmpty else { continue }
            let candidates = try statements.statement(
                db,
                """
                SELECT id, kind\(argumentRoom.columnsSQL) FROM tributary_jobs WHERE state = \(JobState.queued.sql) AND queue = ?1 AND run_at <= ?2
                    AND kind IN (\(SQLText.placeholders(eligible.count, from: 4))) ORDER BY priority DESC, id LIMIT ?3
                """)
            candidates.bind(1, queue)
            candidates.bind(2, now)
            candidates.bind(3, Int64(Self.limitedClaimScan))
            for (offset, kind) in eligible.enumerated() { candidates.bind(Int32(4 + offset), kind) }
            defer { candidates.reset() }
            while chosen.count < limit, queueRoom > 0, eligible.contains(where: { room(kind: $0) > 0 }),
                try candidates.step()
            {
                let kind = candidates.text(column: 1) ?? ""
                guard room(kind: kind) > 0 else { continue }
                if !argumentRoom.isEmpty {
                    // Only the arguments the limits name, read by SQLite: a deep run of jobs of one value at its
                    // limit is read past without decoding each job's arguments.
                    var arguments: [String: String] = [:]
                    for (offset, name) in argumentRoom.arguments.enumerated() {
                        arguments[name] = candidates.text(column: Int32(2 + offset))
                    }
                    guard
                        try argumentRoom.admit(
                            kind: kind, queue: queue, arguments: arguments, now: now, starts: starts, in: db)
                    else { continue }
                }
                chosen.append(candidates.int64(column: 0))
                runningByKind[kind, default: 0] += 1
                if let left = rateRoomByKind[kind] { rateRoomByKind[kind] = left - 1 }
                queueRoom -= 1
            }
        }
        guard !chosen.isEmpty else { return [] }
        let read = try statements.statement(
            db,
            "SELECT \(Self.leasedColumnsSQL) FROM tributary_jobs WHERE id = ?1 AND state = \(JobState.queued.sql)")
        var chosenJobs: [ClaimedJob] = []
        for id in chosen {
            read.bind(1, id)
            defer { read.reset() }
            if try read.step() { chosenJobs.append(Self.leasedJob(read)) }
        }
        let jobs = try lease(chosenJobs, to: worker, now: now, in: db)
        argumentRoom.started(jobs, at: now, starts: starts)
        for job in jobs {
            if let rate = runLimits.rateByKind[job.spec.kind] {
                starts.started("kind:\(job.spec.kind)", at: now, keeping: rate.count)
            }
            if let rate = runLimits.rateByQueue[job.spec.queue] {
                starts.started("queue:\(job.spec.queue)", at: now, keeping: rate.count)
            }
        }
        return try withPayloads(jobs, in: db)
    }

    /// Most queued jobs one limited claim reads per queue.
    static let limitedClaimScan = 10_000

    /// Which of the claimed jobs (sorted by id) may have a payload. Jobs pushed without one have no row in
    /// `tributary_payloads`: when the claimed ids lie close together, one read of the ids in their range finds
    /// the jobs that do (without their payloads), instead of a lookup per job.
    private static func indexesWithPayload(_ jobs: [ClaimedJob], in db: Database, statements: WriterStatements)
        throws -> [Int]
    {
        guard let low = jobs.first?.id, let high = jobs.last?.id else { return [] }
        // Far apart (a high-priority job among old ones, say), the range could hold many other jobs' ids.
        guard high - low < Int64(jobs.count) * 4 else { return Array(jobs.indices) }
        let ids = try statements.statement(
            db, "SELECT job_id FROM tributary_payloads WHERE job_id BETWEEN ? AND ? ORDER BY job_id")
        ids.bind(1, low)
        ids.bind(2, high)
        defer { ids.reset() }
        var indexes: [Int] = []
        var index = 0
        while try ids.step() {
            let id = ids.int64(column: 0)
            while index < jobs.count, jobs[index].id < id { index += 1 }
            if index < jobs.count, jobs[index].id == id { indexes.append(index) }
        }
        return indexes
    }

    /// Records a failed attempt, if that attempt still holds the job: the job goes back to the queue after its
    /// retry delay, or is dead when the failure is permanent or the attempt was its last.
    /// - Returns: what became of the job, or nil when the attempt no longer held it.
    @discardableResult
    func failJob(id: Int64, attempt: Int, worker: String, message: String, permanent: Bool, in db: Database) throws
        -> FailedAttempt?
    {
        guard
            let job = try Row.fetchOne(
                db,
                sql: """
                    SELECT batch, kind, done, total, errors, uncounted, max_attempts, backoff_base_ms, backoff_cap_ms
                    FROM tributary_jobs
                    WHERE id = ? AND attempt = ? AND worker = ? AND state = \(JobState.running.sql)
                    """, arguments: [id, attempt, worker])
        else { return nil }
        return try Self.recordFailure(
            db, job: job, id: id, attempt: attempt, message: message, permanent: permanent)
    }

    /// Returns a worker's running jobs to the queue (the worker left or died). A lost attempt counts: a job that
    /// keeps losing its worker (one that crashes it, say) is dead after its last attempt instead of looping.
    /// - Returns: how many jobs went back to the queue, and each attempt that counted as failed.
    func requeueJobsNamingFailed(
        of worker: String, started: Set<Int64>? = nil, reason: String = "its worker was lost", in db: Database
    ) throws -> (requeued: Int, failed: [FailedAttempt]) {
        let jobs = try Row.fetchAll(
            db,
            sql: """
                SELECT id, attempt, batch, kind, done, total, errors, uncounted, max_attempts, backoff_base_ms, backoff_cap_ms
                FROM tributary_jobs WHERE state = \(JobState.running.sql) AND worker = ?
                """, arguments: [worker])
        var requeued = 0
        var failed: [FailedAttempt] = []
        for job in jobs {
            let id: Int64 = job["id"]
            let attempt: Int = job["attempt"]
            if let started, !started.contains(id) {
                // Claimed for the worker but never sent to it: back without counting the attempt.
                try db.execute(
                    sql: """
                        UPDATE tributary_jobs SET state = \(JobTransition.handBack.sql(entering: .queued)), worker = NULL,
                            uncounted = uncounted + 1, updated_at = (julianday('now') - 2440587.5) * 86400.0
                        WHERE id = ? AND \(JobTransition.handBack.whereSQL)
                        """, arguments: [id])
                try JobTransition.handBack.requireChange(of: id, in: db)
                requeued += 1
                continue
            }
            let failure = try Self.recordFailure(
                db, job: job, id: id, attempt: attempt, message: reason, permanent: false, retryAt: 0)
            if case .retrying = failure.outcome { requeued += 1 }
            failed.append(failure)
        }
        return (requeued, failed)
    }

    /// Hands a worker's running jobs back to the queue without counting their attempts: for jobs a stopping worker
    /// did not finish (it said goodbye after the ones it ran ended or were interrupted at its shutdown timeout, or
    /// left while they were being claimed).
    /// - Returns: the jobs that went back.
    func releaseJobsNamingThem(of worker: String, in db: Database) throws -> [Int64] {
        try Int64.fetchAll(
            db,
            sql: """
                UPDATE tributary_jobs SET state = \(JobTransition.handBack.sql(entering: .queued)), worker = NULL,
                    uncounted = uncounted + 1, updated_at = (julianday('now') - 2440587.5) * 86400.0
                WHERE \(JobTransition.handBack.whereSQL) AND worker = ?
                RETURNING id
                """, arguments: [worker])
    }

    /// The jobs a previous coordinator left running: their attempts count as lost (so a job that brings the
    /// coordinator down ends dead instead of looping), and they go back to the queue or die.
    /// - Parameter sparing: the prefix of the worker ids whose jobs stay running (a cluster's primary spares its
    ///   own leases, those it adopted included: ``PrimaryReplication/workerIDPrefix``); nil spares none.
    static func requeueAfterRestart(_ db: Database, sparing prefix: String? = nil) throws -> [JobsLeftRunning] {
        let spared = prefix == nil ? "" : " AND coalesce(substr(worker, 1, length(:prefix)), '') <> :prefix"
        let jobs = try Row.fetchAll(
            db,
            sql: """
                SELECT id, attempt, batch, kind, done, total, errors, uncounted, max_attempts, backoff_base_ms, backoff_cap_ms
                FROM tributary_jobs WHERE state = \(JobState.running.sql)\(spared)
                """, arguments: prefix.map { ["prefix": $0] } ?? [:])
        let message =
            prefix == nil
            ? "attempt lost: the coordinator restarted"
            : "attempt lost: its worker did not register with the cluster's new primary in time"
        var byBatch: [String: JobsLeftRunning] = [:]
        for job in jobs {
            // Leased by another process: no counter of this one has seen these attempts.
            let failure = try recordFailure(
                db, job: job, id: job["id"], attempt: job["attempt"], message: message, permanent: false, retryAt: 0)
            let batch: String = job["batch"]
            byBatch[batch, default: JobsLeftRunning(batch: batch)].count(failure.outcome)
        }
        return byBatch.values.sorted { $0.batch < $1.batch }
    }

    /// Deletes finished jobs (done or cancelled) last changed before `cutoff`, with their payloads. Dead jobs are
    /// kept until retried. Batch counters keep their totals.
    /// - Parameter limit: the most jobs deleted (a chunk: one write must not hold the store for long).
    /// - Returns: how many jobs were deleted.
    @discardableResult
    func pruneFinishedJobs(before cutoff: Date, limit: Int, in db: Database) throws -> Int {
        guard limit > 0 else { return 0 }
        let finished = "state IN (\(JobState.done.sql), \(JobState.cancelled.sql)) AND updated_at < ?"
        // At most `limit` of them, lowest ids first: those up to the limit-th one's id.
        guard
            let last = try Int64.fetchOne(
                db, sql: "SELECT id FROM tributary_jobs WHERE \(finished) ORDER BY id LIMIT 1 OFFSET ?",
                arguments: [cutoff.timeIntervalSince1970, max(0, limit - 1)])
                ?? Int64.fetchOne(
                    db, sql: "SELECT max(id) FROM tributary_jobs WHERE \(finished)",
                    arguments: [cutoff.timeIntervalSince1970])
        else { return 0 }
        let condition = finished + " AND id <= ?"
        let arguments: StatementArguments = [cutoff.timeIntervalSince1970, last]
        try Self.forgetParents(ofDeleted: condition, arguments: arguments, in: db)
        try db.execute(
            sql:
                "DELETE FROM tributary_payloads WHERE job_id IN (SELECT id FROM tributary_jobs WHERE \(condition))",
            arguments: arguments)
        try db.execute(sql: "DELETE FROM tributary_jobs WHERE \(condition)", arguments: arguments)
        return db.changesCount
    }

    /// A running attempt that outlived its job's timeout.
    public struct TimedOutAttempt: Sendable, Equatable {
        /// The id of the worker that ran the attempt.
        public let worker: String
        /// The attempt's failure as the store recorded it.
        public let failure: FailedAttempt
        /// The job's id.
        public var jobID: Int64 { failure.id }
        /// The attempt that timed out.
        public var attempt: Int { failure.attempt }
    }

    /// Fails the running attempts that have run longer than their job's `timeout_ms` (each is retried or dies).
    /// - Returns: the attempts, so their workers can be told to stop.
    func failTimedOutAttempts(now: Date = Date(), in db: Database) throws -> [TimedOutAttempt] {
        let jobs = try Row.fetchAll(
            db,
            sql: """
                SELECT id, attempt, worker, batch, kind, done, total, errors, uncounted, max_attempts, backoff_base_ms,
                    backoff_cap_ms,
                    timeout_ms
                FROM tributary_jobs
                WHERE state = \(JobState.running.sql) AND timeout_ms > 0 AND leased_at + timeout_ms / 1000.0 < ?
                """, arguments: [now.timeIntervalSince1970])
        return try jobs.map { job in
            let timeout = Double(job["timeout_ms"] as Int64) / 1000
            let failure = try Self.recordFailure(
                db, job: job, id: job["id"], attempt: job["attempt"],
                message: "attempt timed out after \(timeout) s", permanent: false)
            return TimedOutAttempt(worker: job["worker"] ?? "", failure: failure)
        }
    }

    /// Hands every running job back to the queue without counting its attempt: for a graceful stop.
    @discardableResult
    func releaseAllRunningJobs(in db: Database) throws -> Int {
        try db.execute(
            sql: """
                UPDATE tributary_jobs SET state = \(JobTransition.handBack.sql(entering: .queued)), worker = NULL,
                    uncounted = uncounted + 1, updated_at = (julianday('now') - 2440587.5) * 86400.0
                WHERE \(JobTransition.handBack.whereSQL)
                """)
        return db.changesCount
    }

    /// Appends the error to the job's history and moves it on: back to the queue at `retryAt` (the policy's
    /// delay when nil), or dead. `job` holds its batch, kind, errors, uncounted attempts and retry policy.
    ///
    /// An attempt's number is never given twice (a worker's late save or failure must not pass as a later run's), so
    /// the attempts that count against the policy are the number less those not counted: handed back
    /// (`uncounted`), or before a dead job's retry.
    fileprivate static func recordFailure(
        _ db: Database, job: Row, id: Int64, attempt: Int, message: String, permanent: Bool, retryAt: Double? = nil
    ) throws -> FailedAttempt {
        let now = Date().timeIntervalSince1970
        var errors =
            (try? JSONDecoder().decode([JobError].self, from: Data((job["errors"] as String).utf8))) ?? []
        errors.append(JobError(attempt: attempt, at: now, message: message))
        let history = String(decoding: (try? JSONEncoder().encode(errors)) ?? Data("[]".utf8), as: UTF8.self)
        let policy = RetryPolicy(
            maxAttempts: job["max_attempts"], base: .milliseconds(job["backoff_base_ms"] as Int64),
            cap: .milliseconds(job["backoff_cap_ms"] as Int64))
        let counted = attempt - (job["uncounted"] as Int)
        if permanent || counted >= policy.maxAttempts {
            try db.execute(
                sql: """
                    UPDATE tributary_jobs SET state = \(JobTransition.fail.sql(entering: .dead)), error = ?, errors = ?,
                        worker = NULL, updated_at = ?
                    WHERE id = ? AND \(JobTransition.fail.whereSQL)
                    """, arguments: [message, history, now, id])
            try JobTransition.fail.requireChange(of: id, in: db)
            try db.execute(
                sql: "UPDATE tributary_batches SET dead_jobs = dead_jobs + 1 WHERE batch = ?",
                arguments: [job["batch"] as String])
            let settled = try finished(jobs: [id], batches: [job["batch"] as String], now: now, in: db)
            let progress = JobProgress(
                id: id, batch: job["batch"], state: .dead, done: UInt64(max(0, job["done"] as Int64)),
                total: UInt64(max(0, job["total"] as Int64)), attempt: attempt)
            return FailedAttempt(
                id: id, kind: job["kind"], attempt: attempt, outcome: .dead,
                endings: [JobEnding(kind: job["kind"], progress: progress, ranAttempt: true)] + settled)
        }
        var random = SystemRandomNumberGenerator()
        let runAt = retryAt ?? now + policy.delay(afterAttempt: counted, using: &random).seconds
        try db.execute(
            sql: """
                UPDATE tributary_jobs SET state = \(JobTransition.retry.sql(entering: .queued)), error = ?, errors = ?,
                    worker = NULL, run_at = ?, updated_at = ?
                WHERE id = ? AND \(JobTransition.retry.whereSQL)
                """, arguments: [message, history, runAt, now, id])
        try JobTransition.retry.requireChange(of: id, in: db)
        return FailedAttempt(
            id: id, kind: job["kind"], attempt: attempt, outcome: .retrying(at: Date(timeIntervalSince1970: runAt)),
            endings: [])
    }

    static func encodeArguments(_ arguments: [String: String]) -> String {
        if arguments.isEmpty { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(arguments)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func decodeArguments(_ text: String) -> [String: String] {
        if text == "{}" { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}
