import Foundation
import GRDB

/// What a failed attempt did to its job.
public enum JobFailureOutcome: Sendable, Equatable {
    /// Queued again, to run no earlier than this.
    case retrying(at: Date)
    /// Dead: kept with its error history, not run again.
    case dead
}

/// One failed attempt in a job's error history (`tributary_jobs.errors`, a JSON array).
public struct JobErrorRecord: Codable, Sendable, Equatable {
    public let attempt: Int
    /// Seconds since 1970.
    public let at: Double
    public let message: String
}

/// What a push did: an id per pushed job (for a duplicate, the id of the job that has its unique key), and the
/// indexes of the jobs that were not enqueued because of that job.
public struct PushedJobs: Sendable, Equatable {
    public var ids: [Int64] = []
    public var duplicates: [Int] = []
}

/// A job the queue handed to a worker.
public struct ClaimedJob: Sendable {
    public let id: Int64
    public let attempt: Int
    public let spec: Tributary_V1_JobSpec
    public let committedBatches: Int
}

extension RootStore {
    /// Enqueues jobs durably.
    /// - Returns: their ids, in order.
    public func pushJobs(_ specs: [Tributary_V1_JobSpec], batch: String) async throws -> PushedJobs {
        let now = Date().timeIntervalSince1970
        return try await pool.write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO tributary_jobs (batch, kind, arguments, total, created_at, updated_at,
                        max_attempts, backoff_base_ms, backoff_cap_ms, priority, run_at, unique_key, timeout_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            let insertPayload = try db.cachedStatement(
                sql: "INSERT INTO tributary_payloads (job_id, payload) VALUES (?, ?)")
            let findUnique = try db.cachedStatement(
                sql: "SELECT id FROM tributary_jobs WHERE unique_key = ? AND state IN ('queued', 'running')")
            var pushed = PushedJobs()
            pushed.ids.reserveCapacity(specs.count)
            var enqueued: [Tributary_V1_JobSpec] = []
            for (index, spec) in specs.enumerated() {
                if !spec.uniqueKey.isEmpty, let existing = try Int64.fetchOne(findUnique, arguments: [spec.uniqueKey]) {
                    pushed.ids.append(existing)
                    pushed.duplicates.append(index)
                    continue
                }
                let policy = RetryPolicy(spec)
                try insert.execute(arguments: [
                    batch, spec.kind, Self.encodeArguments(spec.arguments), Int64(spec.total), now, now,
                    policy.maxAttempts, Int64(policy.base.seconds * 1000), Int64(policy.cap.seconds * 1000),
                    Int64(spec.priority), spec.runAt, spec.uniqueKey.isEmpty ? nil : spec.uniqueKey,
                    Int64(spec.timeoutMs),
                ])
                let id = db.lastInsertedRowID
                if !spec.payload.isEmpty { try insertPayload.execute(arguments: [id, spec.payload]) }
                pushed.ids.append(id)
                enqueued.append(spec)
            }
            let specs = enqueued
            try db.execute(
                sql: """
                    INSERT INTO tributary_batches (batch, total_jobs, total_rows) VALUES (?, ?, ?)
                    ON CONFLICT (batch) DO UPDATE SET total_jobs = total_jobs + excluded.total_jobs,
                        total_rows = \(SQL.clampedAdd("total_rows", "excluded.total_rows"))
                    """,
                arguments: [
                    batch, specs.count,
                    specs.reduce(Int64(0)) { $0.addingReportingOverflow(Int64(clamping: $1.total)).partialValue },
                ])
            return pushed
        }
    }

    /// Leases the oldest queued job to `worker`, raising its attempt number.
    /// - Returns: the job, or nil when the queue is empty.
    public func claimJob(for worker: String, kinds: [String]) async throws -> ClaimedJob? {
        try await claimJobs(for: worker, kinds: kinds, limit: 1).first
    }

    /// Leases up to `limit` of the oldest queued jobs of `kinds` to `worker` in one transaction, raising their
    /// attempt numbers.
    /// - Returns: the jobs, oldest first; empty when none is queued.
    public func claimJobs(for worker: String, kinds: [String], limit: Int) async throws -> [ClaimedJob] {
        let now = Date().timeIntervalSince1970
        return try await pool.write { db in
            let claim = try db.cachedStatement(
                sql: """
                    UPDATE tributary_jobs SET state = 'running', attempt = attempt + 1, worker = ?, updated_at = ?,
                        leased_at = ?
                    WHERE id IN (SELECT id FROM tributary_jobs WHERE state = 'queued' AND run_at <= ?
                                 AND kind IN (\(SQL.placeholders(kinds.count))) ORDER BY priority DESC, id LIMIT ?)
                    RETURNING id, attempt, kind, arguments, total, committed_batches
                    """)
            let rows = try Row.fetchAll(
                claim,
                arguments: StatementArguments(
                    [worker, now, now, now] as [any DatabaseValueConvertible] + kinds + [limit]))
            let payload = try db.cachedStatement(sql: "SELECT payload FROM tributary_payloads WHERE job_id = ?")
            return try rows.map { row -> ClaimedJob in
                let id: Int64 = row["id"]
                var spec = Tributary_V1_JobSpec()
                spec.kind = row["kind"]
                spec.arguments = Self.decodeArguments(row["arguments"])
                spec.payload = try Data.fetchOne(payload, arguments: [id]) ?? Data()
                spec.total = UInt64(row["total"] as Int64)
                return ClaimedJob(
                    id: id, attempt: row["attempt"], spec: spec, committedBatches: row["committed_batches"])
            }.sorted { $0.id < $1.id }
        }
    }

    /// Records a failed attempt, if that attempt still holds the job: the job goes back to the queue after its
    /// retry delay, or is dead when the failure is permanent or the attempt was its last.
    /// - Returns: what became of the job, or nil when the attempt no longer held it.
    @discardableResult
    public func failJob(id: Int64, attempt: Int, worker: String, message: String, permanent: Bool) async throws
        -> JobFailureOutcome?
    {
        try await pool.write { db in
            guard
                let job = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT batch, errors, max_attempts, backoff_base_ms, backoff_cap_ms FROM tributary_jobs
                        WHERE id = ? AND attempt = ? AND worker = ? AND state = 'running'
                        """, arguments: [id, attempt, worker])
            else { return nil }
            return try Self.recordFailure(
                db, job: job, id: id, attempt: attempt, message: message, permanent: permanent)
        }
    }

    /// Returns a worker's running jobs to the queue (the worker left or died). A lost attempt counts: a job that
    /// keeps losing its worker (one that crashes it, say) is dead after its last attempt instead of looping.
    /// - Returns: how many jobs went back to the queue.
    @discardableResult
    public func requeueJobs(of worker: String, started: Set<Int64>? = nil, reason: String = "its worker was lost")
        async throws -> Int
    {
        try await pool.write { db in
            let jobs = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, attempt, batch, errors, max_attempts, backoff_base_ms, backoff_cap_ms
                    FROM tributary_jobs WHERE state = 'running' AND worker = ?
                    """, arguments: [worker])
            var requeued = 0
            for job in jobs {
                let id: Int64 = job["id"]
                let attempt: Int = job["attempt"]
                if let started, !started.contains(id) {
                    // Claimed for the worker but never sent to it: back without counting the attempt.
                    try db.execute(
                        sql: """
                            UPDATE tributary_jobs SET state = 'queued', worker = NULL, attempt = MAX(attempt - 1, 0)
                            WHERE id = ?
                            """, arguments: [id])
                    requeued += 1
                    continue
                }
                let outcome = try Self.recordFailure(
                    db, job: job, id: id, attempt: attempt, message: reason, permanent: false, retryAt: 0)
                if case .retrying = outcome { requeued += 1 }
            }
            return requeued
        }
    }

    /// Hands a worker's running jobs back to the queue without counting their attempts: for jobs the worker
    /// never started (it said goodbye after finishing the ones it ran, or left while they were being claimed).
    /// - Returns: how many jobs went back.
    @discardableResult
    public func releaseJobs(of worker: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE tributary_jobs SET state = 'queued', worker = NULL, attempt = MAX(attempt - 1, 0)
                    WHERE state = 'running' AND worker = ?
                    """, arguments: [worker])
            return db.changesCount
        }
    }

    /// The jobs a previous coordinator left running: their attempts count as lost (so a job that brings the
    /// coordinator down ends dead instead of looping), and they go back to the queue or die.
    static func requeueAfterRestart(_ db: Database) throws {
        let jobs = try Row.fetchAll(
            db,
            sql: """
                SELECT id, attempt, batch, errors, max_attempts, backoff_base_ms, backoff_cap_ms
                FROM tributary_jobs WHERE state = 'running'
                """)
        for job in jobs {
            _ = try recordFailure(
                db, job: job, id: job["id"], attempt: job["attempt"],
                message: "attempt lost: the coordinator restarted", permanent: false, retryAt: 0)
        }
    }

    /// Deletes finished jobs (done or cancelled) last changed before `cutoff`, with their payloads. Dead jobs are
    /// kept until retried. Batch counters keep their totals.
    /// - Returns: how many jobs were deleted.
    @discardableResult
    public func pruneFinishedJobs(before cutoff: Date) async throws -> Int {
        try await pool.write { db in
            let condition = "state IN ('done', 'cancelled') AND updated_at < ?"
            let arguments: StatementArguments = [cutoff.timeIntervalSince1970]
            try db.execute(
                sql:
                    "DELETE FROM tributary_payloads WHERE job_id IN (SELECT id FROM tributary_jobs WHERE \(condition))",
                arguments: arguments)
            try db.execute(sql: "DELETE FROM tributary_jobs WHERE \(condition)", arguments: arguments)
            return db.changesCount
        }
    }

    /// A running attempt that outlived its job's timeout.
    public struct TimedOutAttempt: Sendable, Equatable {
        public let jobID: Int64
        public let attempt: Int
        public let worker: String
        public let outcome: JobFailureOutcome
    }

    /// Fails the running attempts that have run longer than their job's `timeout_ms` (each is retried or dies).
    /// - Returns: the attempts, so their workers can be told to stop.
    public func failTimedOutAttempts(now: Date = Date()) async throws -> [TimedOutAttempt] {
        try await pool.write { db in
            let jobs = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, attempt, worker, batch, errors, max_attempts, backoff_base_ms, backoff_cap_ms, timeout_ms
                    FROM tributary_jobs
                    WHERE state = 'running' AND timeout_ms > 0 AND leased_at + timeout_ms / 1000.0 < ?
                    """, arguments: [now.timeIntervalSince1970])
            return try jobs.map { job in
                let timeout = Double(job["timeout_ms"] as Int64) / 1000
                let outcome = try Self.recordFailure(
                    db, job: job, id: job["id"], attempt: job["attempt"],
                    message: "attempt timed out after \(timeout) s", permanent: false)
                return TimedOutAttempt(
                    jobID: job["id"], attempt: job["attempt"], worker: job["worker"] ?? "", outcome: outcome)
            }
        }
    }

    /// Hands every running job back to the queue without counting its attempt: for a graceful stop.
    @discardableResult
    public func releaseAllRunningJobs() async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE tributary_jobs SET state = 'queued', worker = NULL, attempt = MAX(attempt - 1, 0)
                    WHERE state = 'running'
                    """)
            return db.changesCount
        }
    }

    /// Appends the error to the job's history and moves it on: back to the queue at `retryAt` (the policy's
    /// delay when nil), or dead.
    fileprivate static func recordFailure(
        _ db: Database, job: Row, id: Int64, attempt: Int, message: String, permanent: Bool, retryAt: Double? = nil
    ) throws -> JobFailureOutcome {
        let now = Date().timeIntervalSince1970
        var errors =
            (try? JSONDecoder().decode([JobErrorRecord].self, from: Data((job["errors"] as String).utf8))) ?? []
        errors.append(JobErrorRecord(attempt: attempt, at: now, message: message))
        let history = String(decoding: (try? JSONEncoder().encode(errors)) ?? Data("[]".utf8), as: UTF8.self)
        let policy = RetryPolicy(
            maxAttempts: job["max_attempts"], base: .milliseconds(job["backoff_base_ms"] as Int64),
            cap: .milliseconds(job["backoff_cap_ms"] as Int64))
        if permanent || attempt >= policy.maxAttempts {
            try db.execute(
                sql: """
                    UPDATE tributary_jobs SET state = 'dead', error = ?, errors = ?, worker = NULL, updated_at = ?
                    WHERE id = ?
                    """, arguments: [message, history, now, id])
            try db.execute(
                sql: "UPDATE tributary_batches SET dead_jobs = dead_jobs + 1 WHERE batch = ?",
                arguments: [job["batch"] as String])
            return .dead
        }
        var random = SystemRandomNumberGenerator()
        let runAt = retryAt ?? now + policy.delay(afterAttempt: attempt, using: &random).seconds
        try db.execute(
            sql: """
                UPDATE tributary_jobs SET state = 'queued', error = ?, errors = ?, worker = NULL, run_at = ?,
                    updated_at = ?
                WHERE id = ?
                """, arguments: [message, history, runAt, now, id])
        return .retrying(at: Date(timeIntervalSince1970: runAt))
    }

    static func encodeArguments(_ arguments: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(arguments)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func decodeArguments(_ text: String) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}
