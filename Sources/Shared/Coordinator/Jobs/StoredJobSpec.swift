import Foundation
import GRDB
import TributaryCore

/// What of a job spec the store keeps to push it later: a batch callback's (`tributary_batches.on_complete`) and a
/// schedule's (`tributary_schedules.job`), as JSON. Payloads, dependencies and unique keys are not kept.
struct StoredJobSpec: Codable {
    var kind: String
    var arguments: [String: String]
    var queue: String
    var priority: Int32
    var maxAttempts: UInt32
    var backoffBaseMilliseconds: Int64? = nil
    var backoffCapMilliseconds: Int64? = nil
    var timeoutMilliseconds: Int64? = nil

    init(_ spec: JobSpec) {
        kind = spec.kind
        arguments = spec.arguments
        queue = spec.queue
        priority = spec.priority
        maxAttempts = spec.maxAttempts
        backoffBaseMilliseconds = spec.backoffBase.wholeMilliseconds
        backoffCapMilliseconds = spec.backoffCap.wholeMilliseconds
        timeoutMilliseconds = spec.timeout?.wholeMilliseconds
    }

    /// The spec read back from `json`, or nil when it is not one.
    static func decode(_ json: String) -> JobSpec? {
        guard let stored = try? JSONDecoder().decode(StoredJobSpec.self, from: Data(json.utf8)) else { return nil }
        return JobSpec(
            kind: stored.kind, arguments: stored.arguments, maxAttempts: stored.maxAttempts,
            backoffBase: .milliseconds(stored.backoffBaseMilliseconds ?? 0),
            backoffCap: .milliseconds(stored.backoffCapMilliseconds ?? 0), priority: stored.priority,
            timeout: stored.timeoutMilliseconds.map { .milliseconds($0) }, queue: stored.queue)
    }

    var json: String {
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Inserts a job of `spec` (queued, without payload) into `batch`, counting it there.
    /// - Parameter tick: the schedule and tick that enqueue it, if any.
    /// - Returns: its id.
    static func insert(
        _ spec: JobSpec, batch: String, now: Double, tick: (schedule: String, at: Double)? = nil, in db: Database
    ) throws -> Int64 {
        let policy = RetryPolicy(spec)
        try db.execute(
            sql: """
                INSERT INTO tributary_jobs (batch, kind, arguments, total, created_at, updated_at, max_attempts,
                    backoff_base_ms, backoff_cap_ms, priority, run_at, queue, timeout_ms, schedule, tick)
                VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
                """,
            arguments: [
                batch, spec.kind, JobStore.encodeArguments(spec.arguments), now, now, Int64(policy.maxAttempts),
                policy.base.wholeMilliseconds, policy.cap.wholeMilliseconds, Int64(spec.priority), spec.queue,
                spec.timeout?.wholeMilliseconds ?? 0, tick?.schedule, tick?.at,
            ])
        let id = db.lastInsertedRowID
        try db.execute(
            sql: """
                INSERT INTO tributary_batches (batch, total_jobs, total_rows) VALUES (?, 1, 0)
                ON CONFLICT (batch) DO UPDATE SET total_jobs = total_jobs + 1
                """, arguments: [batch])
        return id
    }
}
