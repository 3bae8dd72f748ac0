import Foundation
import GRDB
import TributaryCore

/// Batch callbacks (`PushJobs.on_complete`, `tributary push … --on-complete KIND`): a job pushed once, in the same
/// transaction as the change that finishes the batch (its last job done, dead or cancelled), to the batch
/// `BATCH/complete`, with the batch's counts added to its arguments. `completed_job` records it, so it is pushed
/// once however the batch finishes, and a dead job retried afterwards does not push it again.
extension RootStore {
    /// The callback kept in `tributary_batches.on_complete`: what of a spec a callback uses.
    private struct StoredCallback: Codable {
        var kind: String
        var arguments: [String: String]
        var queue: String
        var priority: Int32
        var maxAttempts: UInt32
        var backoffBaseMilliseconds: Int64? = nil
        var backoffCapMilliseconds: Int64? = nil
        var timeoutMilliseconds: Int64? = nil
    }

    /// Sets (or replaces, until it is pushed) the callback of `batch`.
    static func setCallback(_ spec: JobSpec, ofBatch batch: String, in db: Database) throws {
        let stored = StoredCallback(
            kind: spec.kind, arguments: spec.arguments, queue: spec.queue, priority: spec.priority,
            maxAttempts: spec.maxAttempts, backoffBaseMilliseconds: spec.backoffBase.wholeMilliseconds,
            backoffCapMilliseconds: spec.backoffCap.wholeMilliseconds,
            timeoutMilliseconds: spec.timeout?.wholeMilliseconds)
        let json = String(decoding: try JSONEncoder().encode(stored), as: UTF8.self)
        try db.execute(
            sql: "UPDATE tributary_batches SET on_complete = ? WHERE batch = ? AND completed_job IS NULL",
            arguments: [json, batch])
    }

    /// Pushes the callback of each of `batches` that is finished and has one not pushed yet.
    static func pushCallbacks(ofFinished batches: some Sequence<String>, now: Double, in db: Database) throws {
        let finished = try db.cachedStatement(
            sql: """
                SELECT on_complete, total_jobs, done_jobs, dead_jobs, cancelled_jobs FROM tributary_batches
                WHERE batch = ? AND on_complete IS NOT NULL AND completed_job IS NULL
                    AND done_jobs + dead_jobs + cancelled_jobs >= total_jobs
                """)
        for batch in Set(batches) {
            guard let row = try Row.fetchOne(finished, arguments: [batch]),
                let stored = try? JSONDecoder().decode(StoredCallback.self, from: Data((row[0] as String).utf8))
            else { continue }
            var arguments = stored.arguments
            arguments["batch"] = batch
            for (index, name) in ["total_jobs", "done_jobs", "dead_jobs", "cancelled_jobs"].enumerated() {
                arguments[name] = String(max(0, row[index + 1] as Int64? ?? 0))
            }
            let spec = JobSpec(
                kind: stored.kind, arguments: arguments, maxAttempts: stored.maxAttempts,
                backoffBase: .milliseconds(stored.backoffBaseMilliseconds ?? 0),
                backoffCap: .milliseconds(stored.backoffCapMilliseconds ?? 0), priority: stored.priority,
                timeout: stored.timeoutMilliseconds.map { .milliseconds($0) }, queue: stored.queue)
            let policy = RetryPolicy(spec)
            try db.execute(
                sql: """
                    INSERT INTO tributary_jobs (batch, kind, arguments, total, created_at, updated_at, max_attempts,
                        backoff_base_ms, backoff_cap_ms, priority, run_at, queue, timeout_ms)
                    VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                    """,
                arguments: [
                    "\(batch)/complete", spec.kind, encodeArguments(spec.arguments), now, now,
                    Int64(policy.maxAttempts), policy.base.wholeMilliseconds, policy.cap.wholeMilliseconds,
                    Int64(spec.priority), spec.queue, spec.timeout?.wholeMilliseconds ?? 0,
                ])
            let id = db.lastInsertedRowID
            try db.execute(
                sql: """
                    INSERT INTO tributary_batches (batch, total_jobs, total_rows) VALUES (?, 1, 0)
                    ON CONFLICT (batch) DO UPDATE SET total_jobs = total_jobs + 1
                    """, arguments: ["\(batch)/complete"])
            try db.execute(
                sql: "UPDATE tributary_batches SET completed_job = ? WHERE batch = ?", arguments: [id, batch])
        }
    }
}
