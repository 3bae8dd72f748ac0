import Foundation
import GRDB

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
    public func pushJobs(_ specs: [Tributary_V1_JobSpec], batch: String) async throws -> [Int64] {
        let now = Date().timeIntervalSince1970
        return try await pool.write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO tributary_jobs (batch, kind, arguments, total, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """)
            let insertPayload = try db.cachedStatement(
                sql: "INSERT INTO tributary_payloads (job_id, payload) VALUES (?, ?)")
            var ids: [Int64] = []
            ids.reserveCapacity(specs.count)
            for spec in specs {
                try insert.execute(arguments: [
                    batch, spec.kind, Self.encodeArguments(spec.arguments), Int64(spec.total), now, now,
                ])
                let id = db.lastInsertedRowID
                if !spec.payload.isEmpty { try insertPayload.execute(arguments: [id, spec.payload]) }
                ids.append(id)
            }
            try db.execute(
                sql: """
                    INSERT INTO tributary_batches (batch, total_jobs, total_rows) VALUES (?, ?, ?)
                    ON CONFLICT (batch) DO UPDATE SET total_jobs = total_jobs + excluded.total_jobs,
                        total_rows = total_rows + excluded.total_rows
                    """, arguments: [batch, specs.count, specs.reduce(Int64(0)) { $0 + Int64($1.total) }])
            return ids
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
                    UPDATE tributary_jobs SET state = 'running', attempt = attempt + 1, worker = ?, updated_at = ?
                    WHERE id IN (SELECT id FROM tributary_jobs WHERE state = 'queued'
                                 AND kind IN (\(SQL.placeholders(kinds.count))) ORDER BY id LIMIT ?)
                    RETURNING id, attempt, kind, arguments, total, committed_batches
                    """)
            let rows = try Row.fetchAll(
                claim, arguments: StatementArguments([worker, now] as [any DatabaseValueConvertible] + kinds + [limit]))
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

    /// Marks a running job failed with the worker's message, if that attempt still holds it.
    public func failJob(id: Int64, attempt: Int, worker: String, message: String) async throws {
        let now = Date().timeIntervalSince1970
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE tributary_jobs SET state = 'failed', error = ?, worker = NULL, updated_at = ?
                    WHERE id = ? AND attempt = ? AND worker = ? AND state = 'running'
                    """, arguments: [message, now, id, attempt, worker])
            guard db.changesCount > 0 else { return }
            try db.execute(
                sql: """
                    UPDATE tributary_batches SET failed_jobs = failed_jobs + 1
                    WHERE batch = (SELECT batch FROM tributary_jobs WHERE id = ?)
                    """, arguments: [id])
        }
    }

    /// Returns a worker's running jobs to the queue (the worker left or died).
    /// - Returns: how many jobs were re-queued.
    @discardableResult
    public func requeueJobs(of worker: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE tributary_jobs SET state = 'queued', worker = NULL WHERE state = 'running' AND worker = ?",
                arguments: [worker])
            return db.changesCount
        }
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
