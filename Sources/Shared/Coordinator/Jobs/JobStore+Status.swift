import Foundation
import GRDB
import TributaryCore

extension JobStore {
    /// Jobs by state and the last sequence number, read without waiting on the writer.
    public func jobCounts() async throws -> (counts: [JobState: UInt64], lastSeq: UInt64) {
        try await pool.read { db in
            var counts: [JobState: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM tributary_jobs GROUP BY state") {
                counts[try Self.state(row)] = UInt64(row["n"] as Int64)
            }
            return (counts, try FeedStore.lastSequenceNumber(db))
        }
    }

    /// A named queue's depth and latency.
    public struct QueueDepth: Sendable, Equatable {
        public let name: String
        /// Jobs waiting in it (retries and delayed jobs included).
        public let queued: UInt64
        /// How long its oldest due job has waited, in seconds; 0 when none is due.
        public let latency: Double
    }

    /// Each queue that has queued jobs, by name (read from the queued jobs' index, without the writer).
    public func queueDepths(now: Date = Date()) async throws -> [QueueDepth] {
        try await pool.read { db in
            let now = now.timeIntervalSince1970
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT queue, COUNT(*) AS queued,
                        MIN(CASE WHEN run_at <= ?1 THEN MAX(created_at, run_at, updated_at) END) AS due
                    FROM tributary_jobs WHERE state = \(JobState.queued.sql) GROUP BY queue ORDER BY queue
                    """, arguments: [now]
            ).map { row in
                let due: Double? = row["due"]
                return QueueDepth(
                    name: row["queue"], queued: Self.count(row, "queued"), latency: due.map { max(0, now - $0) } ?? 0)
            }
        }
    }

    /// Running jobs per kind and queue: `kind, queue, COUNT(*)` (for status, and for limited claims on the writer).
    static let runningCountsSQL =
        "SELECT kind, queue, COUNT(*) FROM tributary_jobs WHERE state = \(JobState.running.sql) GROUP BY kind, queue"

    /// Running jobs by kind and by queue (read from the running jobs, without the writer).
    public func runningCounts() async throws -> (byKind: [String: Int], byQueue: [String: Int]) {
        try await pool.read { db in
            var byKind: [String: Int] = [:]
            var byQueue: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: Self.runningCountsSQL) {
                byKind[row[0], default: 0] += row[2] as Int
                byQueue[row[1], default: 0] += row[2] as Int
            }
            return (byKind, byQueue)
        }
    }

    /// How many jobs whose `column` (`kind` or `queue`) is `value` were last leased after `since` (a full read of
    /// the job table: for `jobs show`, not for claims).
    public func jobsLeased(whereColumn column: String, is value: String, since: Double) async throws -> Int {
        precondition(column == "kind" || column == "queue")
        return try await pool.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE \(column) = ? AND leased_at > ?",
                arguments: [value, since]) ?? 0
        }
    }

    /// The jobs under a per-argument limit with the argument's `value`: running now (a concurrency limit), or
    /// started in its last period (a rate limit).
    public func usage(of limit: RunLimits.PerArgument, value: String, now: Double) async throws -> Int {
        let (condition, name) = ArgumentLimitRoom.condition(limit.target)
        let started = limit.rate.map { "leased_at > \(now - $0.seconds)" } ?? "state = \(JobState.running.sql)"
        return try await pool.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM tributary_jobs
                    WHERE \(started) AND \(condition) AND coalesce(json_extract(arguments, ?), '') = ?
                    """, arguments: [name, ArgumentLimitRoom.path(limit.argument), value]) ?? 0
        }
    }

    /// The most jobs running under one value of a per-argument concurrency limit.
    public func busiestValue(of limit: RunLimits.PerArgument) async throws -> Int {
        let (condition, name) = ArgumentLimitRoom.condition(limit.target)
        return try await pool.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM tributary_jobs
                        WHERE state = \(JobState.running.sql) AND \(condition)
                        GROUP BY coalesce(json_extract(arguments, ?), ''))
                    """, arguments: [name, ArgumentLimitRoom.path(limit.argument)]) ?? 0
        }
    }

    /// Progress of the jobs pushed together as `batch`.
    public func batchStatus(_ batch: String) async throws -> BatchStatus {
        try await pool.read { db in
            var reply = BatchStatus(batch: batch)
            if let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT total_jobs, done_jobs, dead_jobs, cancelled_jobs, total_rows, done_rows FROM tributary_batches
                    WHERE batch = ?
                    """, arguments: [batch])
            {
                reply = Self.batchCounts(batch, row)
            }
            reply.dead = try Row.fetchAll(db, sql: Self.deadJobsOfBatchSQL, arguments: [batch]).map { row in
                BatchStatus.DeadJob(id: row["id"], message: row["error"] ?? "", attempts: row["attempt"])
            }
            return reply
        }
    }

    /// The batches still running (at most `limit`), then those of the newest jobs, newest first: what a dashboard
    /// shows. Without their dead jobs.
    public func recentBatches(limit: Int = 20) async throws -> [BatchStatus] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT b.batch, total_jobs, done_jobs, dead_jobs, cancelled_jobs, total_rows, done_rows,
                        (SELECT MAX(id) FROM tributary_jobs j WHERE j.batch = b.batch) AS newest
                    FROM tributary_batches b
                    WHERE total_jobs > done_jobs + dead_jobs + cancelled_jobs
                        OR b.batch IN (SELECT DISTINCT batch FROM
                            (SELECT batch FROM tributary_jobs ORDER BY id DESC LIMIT 1000))
                    ORDER BY total_jobs > done_jobs + dead_jobs + cancelled_jobs DESC, newest DESC LIMIT ?
                    """, arguments: [limit])
            return rows.map { Self.batchCounts($0["batch"], $0) }
        }
    }

    /// A `tributary_batches` row's counters, without its dead jobs.
    private static func batchCounts(_ batch: String, _ row: Row) -> BatchStatus {
        var status = BatchStatus(batch: batch)
        status.totalJobs = count(row, "total_jobs")
        status.doneJobs = count(row, "done_jobs")
        status.deadJobs = count(row, "dead_jobs")
        status.cancelledJobs = count(row, "cancelled_jobs")
        status.totalRows = count(row, "total_rows")
        status.doneRows = count(row, "done_rows")
        return status
    }

    /// The first 50 dead jobs of a batch (answered from the `tributary_jobs_dead` partial index).
    static let deadJobsOfBatchSQL =
        "SELECT id, error, attempt FROM tributary_jobs WHERE batch = ? AND state = \(JobState.dead.sql) ORDER BY id LIMIT 50"

    /// A counter column as a non-negative number, whatever SQLite holds (a REAL left by an old overflow included).
    static func count(_ row: Row, _ column: String) -> UInt64 {
        switch row[column] as DatabaseValue {
        case let value where Int64.fromDatabaseValue(value) != nil:
            return UInt64(max(0, Int64.fromDatabaseValue(value)!))
        case let value:
            let number = Double.fromDatabaseValue(value) ?? 0
            return number >= 0x1p63 ? UInt64(Int64.max) : UInt64(max(0, number))
        }
    }
}
