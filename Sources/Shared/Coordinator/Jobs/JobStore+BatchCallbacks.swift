import Foundation
import GRDB
import TributaryCore

/// Batch callbacks (`PushJobs.on_complete`, `tributary push … --on-complete KIND`): a job pushed once, in the same
/// transaction as the change that finishes the batch (its last job done, dead or cancelled), to the batch
/// `BATCH/complete`, with the batch's counts added to its arguments. `completed_job` records it, so it is pushed
/// once however the batch finishes, and a dead job retried afterwards does not push it again.
extension JobStore {
    /// Sets (or replaces, until it is pushed) the callback of `batch`.
    static func setCallback(_ spec: JobSpec, ofBatch batch: String, in db: Database) throws {
        try db.execute(
            sql: "UPDATE tributary_batches SET on_complete = ? WHERE batch = ? AND completed_job IS NULL",
            arguments: [StoredJobSpec(spec).json, batch])
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
                var spec = StoredJobSpec.decode(row[0] as String)
            else { continue }
            spec.arguments["batch"] = batch
            for (index, name) in ["total_jobs", "done_jobs", "dead_jobs", "cancelled_jobs"].enumerated() {
                spec.arguments[name] = String(max(0, row[index + 1] as Int64? ?? 0))
            }
            let id = try StoredJobSpec.insert(spec, batch: "\(batch)/complete", now: now, in: db)
            try db.execute(
                sql: "UPDATE tributary_batches SET completed_job = ? WHERE batch = ?", arguments: [id, batch])
        }
    }
}
