import Foundation
import GRDB
import TributaryCore

/// Dependencies (`JobSpec.afterJobs`, `afterBatches`, `afterPushed`): a job with parents is pushed `waiting` and
/// queued in the transaction that commits its last parent's completion, so it starts only once its parents' data
/// is committed. A parent that dies or is cancelled settles it by its `on_parent_failure` (dead, cancelled, or run
/// once every parent has finished). Each change that finishes jobs (a completion, a death, a cancellation) goes
/// through ``finished(jobs:batches:now:in:)``, which also pushes batch callbacks; settling a child can finish it,
/// and its own children are then settled in the same transaction.
extension JobStore {
    /// A child's parents as they stand.
    private enum Verdict {
        /// A parent is not finished.
        case pending
        /// It may run.
        case ready
        /// A parent died or was cancelled: this names it.
        case parentFailed(String)
    }

    /// Records the parents of job `id` (pushed at `index` of a push whose earlier jobs have `pushedIDs`).
    /// - Throws: ``StoreError`` naming a parent that does not exist, a later job of the push, or the job's own batch.
    static func recordParents(
        of spec: JobSpec, id: Int64, batch: String, index: Int, pushedIDs: [Int64], in db: Database
    ) throws {
        var parents = Set(spec.afterJobs)
        for position in spec.afterPushed {
            guard position >= 0, position < index, position < pushedIDs.count else {
                throw StoreError(
                    .invalidRequest,
                    "job \(index) of the push waits for job \(position) of the push: after_pushed names earlier jobs only"
                )
            }
            parents.insert(pushedIDs[position])
        }
        let exists = try db.cachedStatement(sql: "SELECT 1 FROM tributary_jobs WHERE id = ?")
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO tributary_job_parents (parent, child) VALUES (?, ?)")
        for parent in parents.sorted() {
            guard try Bool.fetchOne(exists, arguments: [parent]) == true else {
                throw StoreError(
                    .invalidRequest, "job \(index) of the push waits for job \(parent), which does not exist")
            }
            try insert.execute(arguments: [parent, id])
        }
        let batchExists = try db.cachedStatement(sql: "SELECT 1 FROM tributary_batches WHERE batch = ?")
        let insertBatch = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO tributary_batch_parents (batch, child) VALUES (?, ?)")
        for parentBatch in Set(spec.afterBatches).sorted() {
            guard parentBatch != batch else {
                throw StoreError(
                    .invalidRequest, "job \(index) of the push waits for its own batch '\(batch)', which it is part of")
            }
            guard try Bool.fetchOne(batchExists, arguments: [parentBatch]) == true else {
                throw StoreError(
                    .invalidRequest, "job \(index) of the push waits for batch '\(parentBatch)', which does not exist")
            }
            try insertBatch.execute(arguments: [parentBatch, id])
        }
    }

    /// After jobs finished (done, dead or cancelled) in this transaction: pushes the callbacks of `batches` that are
    /// finished and settles the children of the jobs and of the batches.
    /// - Returns: the children (and their children) that this made dead or cancelled.
    static func finished(jobs: some Sequence<Int64>, batches: some Sequence<String>, now: Double, in db: Database)
        throws -> [JobEnding]
    {
        let batches = Set(batches)
        try pushCallbacks(ofFinished: batches, now: now, in: db)
        return try settle(children(ofJobs: jobs, batches: batches, in: db), now: now, in: db)
    }

    /// The children of `jobs` and of `batches`.
    private static func children(ofJobs jobs: some Sequence<Int64>, batches: Set<String>, in db: Database) throws
        -> [Int64]
    {
        // Most stores have no dependencies: one look at both tables spares a lookup per finished job.
        let any = try db.cachedStatement(
            sql: "SELECT EXISTS (SELECT 1 FROM tributary_job_parents) OR EXISTS (SELECT 1 FROM tributary_batch_parents)"
        )
        guard try Bool.fetchOne(any) == true else { return [] }
        let byJob = try db.cachedStatement(sql: "SELECT child FROM tributary_job_parents WHERE parent = ?")
        let byBatch = try db.cachedStatement(sql: "SELECT child FROM tributary_batch_parents WHERE batch = ?")
        var children: [Int64] = []
        for job in jobs { children += try Int64.fetchAll(byJob, arguments: [job]) }
        for batch in batches { children += try Int64.fetchAll(byBatch, arguments: [batch]) }
        return children
    }

    /// Settles waiting jobs whose parents changed: queued when they may run; dead or cancelled (by their policy)
    /// when a parent failed, which settles their own children in turn.
    /// - Returns: the jobs it made dead or cancelled, for the feed and the counters (``JobEnding``).
    static func settle(_ children: [Int64], now: Double, in db: Database) throws -> [JobEnding] {
        var work = children
        var ended: [JobEnding] = []
        let read = try db.cachedStatement(
            sql:
                "SELECT batch, kind, done, total, attempt, on_parent_failure, errors FROM tributary_jobs WHERE id = ? AND state = \(JobState.waiting.sql)"
        )
        while let child = work.popLast() {
            guard let row = try Row.fetchOne(read, arguments: [child]) else { continue }
            let policy = (row["on_parent_failure"] as String?).flatMap(ParentFailure.init(rawValue:)) ?? .fail
            let batch: String = row["batch"]
            switch try verdict(of: child, policy: policy, in: db) {
            case .pending:
                continue
            case .ready:
                try db.execute(
                    sql: """
                        UPDATE tributary_jobs SET state = \(JobTransition.release.sql(entering: .queued)), updated_at = ?
                        WHERE id = ? AND \(JobTransition.release.whereSQL)
                        """, arguments: [now, child])
                try JobTransition.release.requireChange(of: child, in: db)
            case .parentFailed(let message):
                let cancel = policy == .cancel
                var errors =
                    (try? JSONDecoder().decode([JobError].self, from: Data((row["errors"] as String).utf8))) ?? []
                errors.append(JobError(attempt: 0, at: now, message: message))
                let history = String(decoding: (try? JSONEncoder().encode(errors)) ?? Data("[]".utf8), as: UTF8.self)
                try db.execute(
                    sql: """
                        UPDATE tributary_jobs SET state = ?, error = ?, errors = ?, updated_at = ?
                        WHERE id = ? AND \(JobTransition.settleByParent.whereSQL)
                        """,
                    arguments: [
                        JobTransition.settleByParent.name(entering: cancel ? .cancelled : .dead), message, history, now,
                        child,
                    ])
                try JobTransition.settleByParent.requireChange(of: child, in: db)
                let counter = cancel ? "cancelled_jobs" : "dead_jobs"
                try db.execute(
                    sql: "UPDATE tributary_batches SET \(counter) = \(counter) + 1 WHERE batch = ?", arguments: [batch])
                try pushCallbacks(ofFinished: [batch], now: now, in: db)
                let progress = JobProgress(
                    id: child, batch: batch, state: cancel ? .cancelled : .dead,
                    done: UInt64(max(0, row["done"] as Int64)), total: UInt64(max(0, row["total"] as Int64)),
                    attempt: row["attempt"])
                ended.append(JobEnding(kind: row["kind"], progress: progress, ranAttempt: false))
                work += try Self.children(ofJobs: [child], batches: [batch], in: db)
            }
        }
        return ended
    }

    /// Whether a waiting job may run, must wait, or has a failed parent (one its policy does not run after).
    private static func verdict(of child: Int64, policy: ParentFailure, in db: Database) throws -> Verdict {
        var pending = false
        var failure: String?
        let jobs = try db.cachedStatement(
            sql: """
                SELECT d.parent, p.state FROM tributary_job_parents d LEFT JOIN tributary_jobs p ON p.id = d.parent
                WHERE d.child = ? ORDER BY d.parent
                """)
        for row in try Row.fetchAll(jobs, arguments: [child]) {
            let parent: Int64 = row[0]
            // A parent deleted since was finished: its end settled this job then.
            switch (row[1] as String?).flatMap(JobState.init(rawValue:)) {
            case .done, nil: break
            case .dead: failure = failure ?? "job \(parent), which it waits for, is dead"
            case .cancelled: failure = failure ?? "job \(parent), which it waits for, was cancelled"
            case .waiting, .queued, .running: pending = true
            }
        }
        let batches = try db.cachedStatement(
            sql: """
                SELECT d.batch, b.total_jobs, b.done_jobs, b.dead_jobs, b.cancelled_jobs FROM tributary_batch_parents d
                LEFT JOIN tributary_batches b ON b.batch = d.batch WHERE d.child = ? ORDER BY d.batch
                """)
        for row in try Row.fetchAll(batches, arguments: [child]) {
            let (total, done, dead, cancelled) =
                (row[1] as Int64? ?? 0, row[2] as Int64? ?? 0, row[3] as Int64? ?? 0, row[4] as Int64? ?? 0)
            if dead + cancelled > 0 {
                failure =
                    failure
                    ?? "batch '\(row[0] as String)', which it waits for, has \(dead) dead and \(cancelled) cancelled jobs"
            }
            if done + dead + cancelled < total { pending = true }
        }
        switch (policy, failure) {
        case (.run, _), (_, nil): return pending ? .pending : .ready
        case (_, .some(let message)): return .parentFailed(message)
        }
    }

    /// Why a waiting job waits, for `jobs show`: its parents that are not done.
    func parentsReason(of id: Int64) async throws -> String {
        try await pool.read { db in
            var parts: [String] = []
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT d.parent, p.state FROM tributary_job_parents d JOIN tributary_jobs p ON p.id = d.parent
                    WHERE d.child = ? AND p.state <> \(JobState.done.sql) ORDER BY d.parent
                    """, arguments: [id])
            {
                parts.append("job \(row[0] as Int64) (\(row[1] as String))")
            }
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT d.batch, b.total_jobs, b.done_jobs FROM tributary_batch_parents d
                    JOIN tributary_batches b ON b.batch = d.batch
                    WHERE d.child = ? AND b.done_jobs < b.total_jobs ORDER BY d.batch
                    """, arguments: [id])
            {
                parts.append("batch \(row[0] as String) (\(row[2] as Int64) of \(row[1] as Int64) jobs done)")
            }
            return parts.isEmpty ? "" : "waits for " + parts.joined(separator: ", ")
        }
    }

    /// The parents of a job, for `jobs list|show`.
    static func parents(of id: Int64, in db: Database) throws -> (jobs: [Int64], batches: [String]) {
        let jobs = try db.cachedStatement(
            sql: "SELECT parent FROM tributary_job_parents WHERE child = ? ORDER BY parent")
        let batches = try db.cachedStatement(
            sql: "SELECT batch FROM tributary_batch_parents WHERE child = ? ORDER BY batch")
        return (try Int64.fetchAll(jobs, arguments: [id]), try String.fetchAll(batches, arguments: [id]))
    }

    /// Forgets the parent records of deleted jobs (as parent or as child).
    static func forgetParents(ofDeleted condition: String, arguments: StatementArguments, in db: Database) throws {
        try db.execute(
            sql: """
                DELETE FROM tributary_job_parents WHERE child IN (SELECT id FROM tributary_jobs WHERE \(condition))
                    OR parent IN (SELECT id FROM tributary_jobs WHERE \(condition))
                """, arguments: arguments + arguments)
        try db.execute(
            sql:
                "DELETE FROM tributary_batch_parents WHERE child IN (SELECT id FROM tributary_jobs WHERE \(condition))",
            arguments: arguments)
    }
}
