import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// Looking at jobs and putting dead ones back: what `tributary jobs list|show|retry` asks for.
extension JobStore {
    /// Jobs, newest first, filtered by state and batch when given.
    public func list(state: JobState?, batch: String?, limit: Int, before: Int64?) async throws -> [JobInfo] {
        try await pool.read { db in
            var conditions: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let state {
                // A literal, so that a partial index on the state can serve it.
                conditions.append("state = \(state.sql)")
            }
            if let batch {
                conditions.append("batch = ?")
                arguments.append(batch)
            }
            if let before {
                conditions.append("id < ?")
                arguments.append(before)
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            arguments.append(limit)
            // Dead jobs are few among many done ones: read from their index rather than every job, newest first,
            // until 50 dead ones turn up (the planner's choice, whatever the statistics).
            let index = state == .dead ? "INDEXED BY tributary_jobs_dead" : ""
            return try Row.fetchAll(
                db, sql: "SELECT * FROM tributary_jobs \(index) \(filter) ORDER BY id DESC LIMIT ?",
                arguments: StatementArguments(arguments)
            ).map { try Self.jobInfo($0, in: db) }
        }
    }

    /// The progress of some jobs, for the feed's `$jobs` topic.
    public func progress(ofJobs ids: [Int64]) async throws -> [JobProgress] {
        guard !ids.isEmpty else { return [] }
        return try await pool.read { db in try Self.progress(ofJobs: ids, in: db) }
    }

    /// The progress of some jobs as `db` sees them (a write's transaction, say).
    static func progress(ofJobs ids: [Int64], in db: Database) throws -> [JobProgress] {
        guard !ids.isEmpty else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT id, batch, state, done, total, attempt FROM tributary_jobs
                WHERE id IN (\(SQLText.placeholders(ids.count))) ORDER BY id
                """, arguments: StatementArguments(ids)
        ).map { row in
            JobProgress(
                id: row["id"], batch: row["batch"], state: try Self.state(row),
                done: UInt64(max(0, row["done"] as Int64)), total: UInt64(max(0, row["total"] as Int64)),
                attempt: Int(row["attempt"] as Int64))
        }
    }

    /// The running jobs (at most `limit`), with their progress, for `status`.
    public func runningJobs(limit: Int = 50) async throws -> [JobInfo] {
        try await list(state: .running, batch: nil, limit: limit, before: nil).map { job in
            var job = job
            job.errors = []
            return job
        }
    }

    /// One job, or nil when there is none with that id.
    public func job(id: Int64) async throws -> JobInfo? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM tributary_jobs WHERE id = ?", arguments: [id]).map {
                try Self.jobInfo($0, in: db)
            }
        }
    }

    /// Puts a dead job back in the queue with all its attempts again (those it ran no longer count; its next run is
    /// numbered after them) and its error history kept.
    /// - Throws: ``StoreError`` naming the job's state when it is not dead.
    /// - Returns: the job as it is now and, for a job with parents, itself when a failed parent settled it again
    ///   (``JobEnding``); nil when there is no job with that id.
    func retryJob(id: Int64, in db: Database) throws -> (job: JobInfo, settled: [JobEnding])? {
        let now = Date().timeIntervalSince1970
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT state, batch FROM tributary_jobs WHERE id = ?", arguments: [id])
        else { return nil }
        let state = try Self.state(row)
        guard JobTransition.retryDead.allows(state) else { throw JobTransition.retryDead.refusal(of: id, in: state) }
        // A job with parents waits for them again (and is settled at once by how they stand).
        let parents = try Self.parents(of: id, in: db)
        let hasParents = !parents.jobs.isEmpty || !parents.batches.isEmpty
        try db.execute(
            sql: """
                UPDATE tributary_jobs SET state = ?, uncounted = attempt, run_at = 0, updated_at = ?
                WHERE id = ? AND \(JobTransition.retryDead.whereSQL)
                """, arguments: [JobTransition.retryDead.name(entering: hasParents ? .waiting : .queued), now, id])
        try JobTransition.retryDead.requireChange(of: id, in: db)
        try db.execute(
            sql: "UPDATE tributary_batches SET dead_jobs = dead_jobs - 1 WHERE batch = ?",
            arguments: [row["batch"] as String])
        let settled = hasParents ? try Self.settle([id], now: now, in: db) : []
        return try Row.fetchOne(db, sql: "SELECT * FROM tributary_jobs WHERE id = ?", arguments: [id])
            .map { (try Self.jobInfo($0, in: db), settled) }
    }

    /// Deletes a finished job (done, dead or cancelled) and its payload. Batch counters keep their totals.
    /// - Throws: ``StoreError`` naming the job's state when it is queued or running.
    /// - Returns: the job as it was, or nil when there is none.
    func deleteJob(id: Int64, in db: Database) throws -> JobInfo? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM tributary_jobs WHERE id = ?", arguments: [id])
        else { return nil }
        let job = try Self.jobInfo(row)
        guard [.done, .dead, .cancelled].contains(job.state) else {
            throw StoreError(.constraint, "job \(id) is \(job.state.rawValue); cancel it before deleting it")
        }
        try db.execute(sql: "DELETE FROM tributary_payloads WHERE job_id = ?", arguments: [id])
        try Self.forgetParents(ofDeleted: "id = ?", arguments: [id], in: db)
        try db.execute(sql: "DELETE FROM tributary_jobs WHERE id = ?", arguments: [id])
        return job
    }

    /// Cancels a queued or running job; a running one keeps the batches it committed.
    /// - Throws: ``StoreError`` naming the job's state when it is already finished.
    /// - Returns: the job as it was before (its worker and attempt tell who to stop) and every job that ended of
    ///   it: itself, then the jobs waiting for it that its cancellation settled; nil when there is no job with that
    ///   id.
    func cancelJob(id: Int64, in db: Database) throws -> (before: JobInfo, endings: [JobEnding])? {
        let now = Date().timeIntervalSince1970
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM tributary_jobs WHERE id = ?", arguments: [id])
        else { return nil }
        let job = try Self.jobInfo(row)
        guard JobTransition.cancel.allows(job.state) else { throw JobTransition.cancel.refusal(of: id, in: job.state) }
        try db.execute(
            sql: """
                UPDATE tributary_jobs SET state = \(JobTransition.cancel.sql(entering: .cancelled)), worker = NULL,
                    updated_at = ?
                WHERE id = ? AND \(JobTransition.cancel.whereSQL)
                """, arguments: [now, id])
        try JobTransition.cancel.requireChange(of: id, in: db)
        try db.execute(
            sql: "UPDATE tributary_batches SET cancelled_jobs = cancelled_jobs + 1 WHERE batch = ?",
            arguments: [job.batch])
        let settled = try Self.finished(jobs: [id], batches: [job.batch], now: now, in: db)
        let progress = JobProgress(
            id: id, batch: job.batch, state: .cancelled, done: job.done, total: job.total, attempt: job.attempt)
        return (job, [JobEnding(kind: job.kind, progress: progress, ranAttempt: job.state == .running)] + settled)
    }

    /// A job row as ``JobInfo``, with its parents.
    static func jobInfo(_ row: Row, in db: Database) throws -> JobInfo {
        var info = try jobInfo(row)
        (info.afterJobs, info.afterBatches) = try parents(of: info.id, in: db)
        return info
    }

    private static func jobInfo(_ row: Row) throws -> JobInfo {
        let history = (try? JSONDecoder().decode([JobError].self, from: Data((row["errors"] as String).utf8)))
        let runAt: Double = row["run_at"]
        let job = JobInfo(
            id: row["id"], batch: row["batch"], kind: row["kind"], state: try state(row), attempt: row["attempt"],
            maxAttempts: row["max_attempts"], done: UInt64(max(0, row["done"] as Int64)),
            total: UInt64(max(0, row["total"] as Int64)), worker: row["worker"],
            runAt: runAt == 0 ? nil : Date(timeIntervalSince1970: runAt),
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]), arguments: decodeArguments(row["arguments"]),
            errors: history ?? [], queue: row["queue"] ?? JobQueue.defaultName)
        var info = job
        info.attemptsCounted = (row["attempt"] as Int) - (row["uncounted"] as Int)
        info.onParentFailure = (row["on_parent_failure"] as String?).flatMap(ParentFailure.init(rawValue:)) ?? .fail
        info.schedule = row["schedule"]
        info.tick = row["tick"]
        return info
    }

    /// A job row's state; a name this version does not know is refused rather than guessed.
    static func state(_ row: Row) throws -> JobState {
        let name: String = row["state"]
        guard let state = JobState(rawValue: name) else {
            throw StoreError(.incompatibleStore, "a job is in the unknown state '\(name)'")
        }
        return state
    }
}
