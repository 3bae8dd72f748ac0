import Foundation
import GRDB
import TributaryCore

extension JobStore {
    /// The job counts a status shows, read in one transaction without waiting on the writer.
    public struct Overview: Sendable, Equatable {
        /// Jobs by state (every state, zeros included).
        public var counts: [JobState: UInt64]
        /// The feed's last sequence number.
        public var lastSeq: UInt64
        /// Each queue that has queued jobs or is paused, by name.
        public var queues: [QueueDepth]
    }

    /// A named queue's depth and latency.
    public struct QueueDepth: Sendable, Equatable {
        /// The queue's name.
        public let name: String
        /// Jobs waiting in it (retries and delayed jobs included).
        public let queued: UInt64
        /// How long the job at the head of the queue has waited, in seconds: for each priority (the highest
        /// `latencyPriorities`), the due job a claim would take next at that priority; the longest of
        /// their waits; 0 when none is due. A job's wait starts when it became claimable (pushed, due, retried or
        /// put back).
        public let latency: Double
        /// Whether it is paused: its jobs are not claimed.
        public var paused = false

        /// As a status shows it (and the wire carries it: `.status.wire`).
        public var status: CoordinatorStatus.Queue {
            CoordinatorStatus.Queue(name: name, queued: queued, latencySeconds: latency, paused: paused)
        }
    }

    /// How many of a queue's priorities, highest first, its latency looks at.
    static let latencyPriorities = 64

    /// Jobs by state, the feed's last sequence number and the queues' depths.
    ///
    /// Every count but `done` is read from the state's partial index, and `done` is the table's row count less the
    /// others, so the cost follows the unfinished jobs, not the finished ones a store keeps; each queue's latency
    /// is a few index lookups per priority.
    public func overview(now: Date = Date()) async throws -> Overview {
        try await pool.read { db in
            let queues = try Self.queueDepths(db, now: now.timeIntervalSince1970)
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM tributary_jobs) AS total,
                        (SELECT COUNT(*) FROM tributary_jobs WHERE state = \(JobState.waiting.sql)) AS waiting,
                        (SELECT COUNT(*) FROM tributary_jobs WHERE state = \(JobState.running.sql)) AS running,
                        (SELECT COUNT(*) FROM tributary_jobs WHERE state = \(JobState.dead.sql)) AS dead,
                        (SELECT COUNT(*) FROM tributary_jobs WHERE state = \(JobState.cancelled.sql)) AS cancelled
                    """)!
            var counts: [JobState: UInt64] = [.queued: queues.reduce(0) { $0 + $1.queued }]
            for state in [JobState.waiting, .running, .dead, .cancelled] {
                counts[state] = Self.count(row, state.rawValue)
            }
            let unfinished = counts.values.reduce(0, +)
            counts[.done] = Self.count(row, "total") - min(unfinished, Self.count(row, "total"))
            return Overview(counts: counts, lastSeq: try FeedStore.lastSequenceNumber(db), queues: queues)
        }
    }

    /// Each queue that has queued jobs or is paused: its count from the queued jobs' index, and its latency from the
    /// heads of its priorities (see ``QueueDepth/latency``).
    static func queueDepths(_ db: Database, now: Double) throws -> [QueueDepth] {
        let paused = try pausedQueues(in: db)
        var depths = try Row.fetchAll(
            db,
            sql:
                "SELECT queue, COUNT(*) AS queued FROM tributary_jobs WHERE state = \(JobState.queued.sql) GROUP BY queue ORDER BY queue"
        ).map { row in
            let name: String = row["queue"]
            return QueueDepth(
                name: name, queued: count(row, "queued"), latency: try latency(of: name, now: now, in: db),
                paused: paused.contains(name))
        }
        let listed = Set(depths.map(\.name))
        depths += paused.subtracting(listed).map { QueueDepth(name: $0, queued: 0, latency: 0, paused: true) }
        return depths.sorted { $0.name < $1.name }
    }

    /// One queue's depth, latency and pause, read from its own rows (``queueDepths(_:now:)`` for one).
    static func queueDepth(named name: String, _ db: Database, now: Double) throws -> QueueDepth {
        let queued =
            try UInt64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = \(JobState.queued.sql) AND queue = ?"),
                arguments: [name]) ?? 0
        return QueueDepth(
            name: name, queued: queued, latency: queued == 0 ? 0 : try latency(of: name, now: now, in: db),
            paused: try isPaused(name, in: db))
    }

    /// Whether the queue `name` is paused.
    static func isPaused(_ name: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM tributary_paused_queues WHERE name = ?"), arguments: [name])
            ?? false
    }

    /// A queue's latency (``QueueDepth/latency``): a few index lookups per priority, the highest first.
    private static func latency(of name: String, now: Double, in db: Database) throws -> Double {
        let queued = "FROM tributary_jobs WHERE state = \(JobState.queued.sql) AND queue = ?1"
        let highest = try db.cachedStatement(sql: "SELECT priority \(queued) ORDER BY priority DESC LIMIT 1")
        let next = try db.cachedStatement(
            sql: "SELECT priority \(queued) AND priority < ?2 ORDER BY priority DESC LIMIT 1")
        let head = try db.cachedStatement(
            sql:
                "SELECT MAX(created_at, run_at, updated_at) \(queued) AND priority = ?2 AND run_at <= ?3 ORDER BY id LIMIT 1"
        )
        var oldest: Double?
        var priority = try Int64.fetchOne(highest, arguments: [name])
        var looked = 0
        while let current = priority, looked < latencyPriorities {
            if let due = try Double.fetchOne(head, arguments: [name, current, now]) {
                oldest = min(oldest ?? due, due)
            }
            looked += 1
            priority = try Int64.fetchOne(next, arguments: [name, current])
        }
        return oldest.map { max(0, now - $0) } ?? 0
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
                BatchStatus.DeadJob(id: row["id"], message: row["error"] ?? "", attempts: row["attempts"])
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
        "SELECT id, error, attempt - uncounted AS attempts FROM tributary_jobs WHERE batch = ? AND state = \(JobState.dead.sql) ORDER BY id LIMIT 50"

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
