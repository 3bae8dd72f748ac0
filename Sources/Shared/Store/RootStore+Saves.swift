import Foundation
import GRDB

/// What became of a save sent to the root.
public enum SaveOutcome: Sendable {
    /// Merged and committed as `seq`; `events` is what to publish on the feed. `resolved` holds the stored rows of
    /// the objects whose conflicts the merge policy resolved.
    case committed(
        seq: UInt64, events: CommitEvents, remaps: [Tributary_V1_IDRemap], resolved: [Tributary_V1_EntityBatch])
    /// Committed, but changed nothing in the store, so no sequence number was used. Inserts may still have
    /// merged into existing objects (find-or-create of objects that exist): `remaps` says which.
    case committedEmpty(remaps: [Tributary_V1_IDRemap], resolved: [Tributary_V1_EntityBatch])
    /// This (job, batch) had been applied before; nothing was applied again.
    case duplicate(seq: UInt64)

    /// Whether nothing was applied because it had been before.
    public var isDuplicate: Bool {
        if case .duplicate = self { return true }
        return false
    }
}

/// A save the root refused because the sender's job attempt no longer holds the job.
public struct LeaseError: Error, CustomStringConvertible, Sendable {
    public let jobID: Int64
    public let message: String
    public let isUnknownJob: Bool
    /// The batch index skipped ahead of the job's committed batches.
    public var isOutOfOrder = false
    /// The job was cancelled.
    public var isCancelled = false
    public var description: String { message }
}

extension RootStore {
    /// Merges a worker's change set and records the job's progress (or completion) in one transaction.
    /// - Throws: ``LeaseError`` when the job is unknown or its lease belongs to another attempt or worker;
    ///   ``StoreError`` when the change set does not fit the model or the store's constraints.
    public func applySave(_ save: Tributary_V1_SaveChanges, from worker: String) async throws -> SaveOutcome {
        try await applySaves([(save, worker)])[0].get()
    }

    /// Group commit: applies several saves in one transaction (one WAL commit), each in a savepoint of its own,
    /// so a save that fails is rolled back alone and the others still commit.
    /// - Returns: one result per save, in order; sequence numbers follow that order.
    public func applySaves(_ saves: [(save: Tributary_V1_SaveChanges, worker: String)]) async throws
        -> [Result<SaveOutcome, any Error>]
    {
        let writer = self.writer
        let model = self.model
        return try await pool.write { db in
            var results: [Result<SaveOutcome, any Error>] = []
            results.reserveCapacity(saves.count)
            for (save, worker) in saves {
                var outcome = SaveOutcome.committedEmpty(remaps: [], resolved: [])
                do {
                    try db.inSavepoint {
                        outcome = try Self.apply(save, from: worker, in: db, merger: writer.merger, model: model)
                        return .commit
                    }
                    results.append(.success(outcome))
                } catch {
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    static func apply(
        _ save: Tributary_V1_SaveChanges, from worker: String, in db: Database, merger: ChangeSetMerger, model: Model
    ) throws -> SaveOutcome {
        let jobID = Int64(save.jobID)
        var lease: (batch: String, done: Int64)?
        if jobID != 0 {
            switch try checkLease(db, save: save, jobID: jobID, worker: worker) {
            case .applied(let outcome): return outcome
            case .held(let batch, let done): lease = (batch, done)
            }
        }
        // Every object the save writes gets the commit's sequence number as its version.
        let seq = try lastSequenceNumber(db) + 1
        let result = try merger.apply(save.changes, version: seq, in: db)
        var resolved: [Tributary_V1_EntityBatch] = []
        for (name, ids) in result.resolved.sorted(by: { $0.key < $1.key }) {
            guard let entity = model.entity(named: name) else { continue }
            var batch = try ObjectRows.read(entity, ids: ids, in: db)
            batch.operation = .update
            if !batch.ids.isEmpty { resolved.append(batch) }
        }
        let remaps = result.remaps.map { entity, pair in
            Tributary_V1_IDRemap.with {
                $0.entity = entity
                $0.fromIds = pair.from
                $0.toIds = pair.to
            }
        }
        var outcome = SaveOutcome.committedEmpty(remaps: remaps, resolved: resolved)
        let now = Date().timeIntervalSince1970
        if result.entities.contains(where: { !$0.changes.isEmpty }) {
            let origin = Tributary_V1_Origin.with {
                $0.workerID = worker
                $0.jobID = save.jobID
                $0.attempt = save.attempt
                $0.batchIndex = save.batchIndex
            }
            let events = try CommitEvents.make(
                seq: seq, at: now, origin: origin, changeSet: save.changes, result: result, resolved: resolved,
                model: model)
            try db.cachedStatement(
                sql: """
                    INSERT INTO tributary_history (seq, job_id, attempt, batch_index, worker, committed_at, record)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                Int64(seq), jobID == 0 ? nil : jobID, Int64(save.attempt), Int64(save.batchIndex), worker, now,
                events.record,
            ])
            outcome = .committed(seq: seq, events: events, remaps: remaps, resolved: resolved)
        }
        if jobID != 0, let lease {
            try db.cachedStatement(
                sql:
                    "UPDATE tributary_batches SET done_rows = \(SQL.clampedAdd("done_rows", "?1")), done_jobs = done_jobs + ?2 WHERE batch = ?3"
            ).execute(arguments: [Int64(save.progressDone) - lease.done, save.completesJob ? 1 : 0, lease.batch])
            try db.cachedStatement(
                sql: """
                    UPDATE tributary_jobs SET done = ?, committed_batches = ?, state = ?, updated_at = ?,
                        worker = CASE WHEN ? THEN NULL ELSE worker END
                    WHERE id = ?
                    """
            ).execute(arguments: [
                Int64(save.progressDone), Int64(save.batchIndex) + 1, save.completesJob ? "done" : "running", now,
                save.completesJob, jobID,
            ])
        }
        return outcome
    }

    private enum LeaseCheck {
        /// The batch was applied before: answer with this.
        case applied(SaveOutcome)
        /// The save's attempt holds the job, of this batch, with this progress so far.
        case held(batch: String, done: Int64)
    }

    /// Checks that the save's attempt holds the job, or finds that the batch was applied before.
    private static func checkLease(_ db: Database, save: Tributary_V1_SaveChanges, jobID: Int64, worker: String)
        throws -> LeaseCheck
    {
        guard
            let job = try Row.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT state, attempt, worker, committed_batches, batch, done FROM tributary_jobs WHERE id = ?"
                ),
                arguments: [jobID])
        else {
            throw LeaseError(jobID: jobID, message: "job \(jobID) does not exist", isUnknownJob: true)
        }
        if let seq = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT seq FROM tributary_history WHERE job_id = ? AND batch_index = ?"),
            arguments: [jobID, Int64(save.batchIndex)])
        {
            return .applied(.duplicate(seq: UInt64(seq)))
        }
        let state: String = job["state"]
        let committed: Int64 = job["committed_batches"]
        if state == "done" || Int64(save.batchIndex) < committed {
            return .applied(.duplicate(seq: 0))
        }
        let attempt: Int64 = job["attempt"]
        let owner: String? = job["worker"]
        if state == "cancelled" {
            throw LeaseError(
                jobID: jobID, message: "job \(jobID) was cancelled", isUnknownJob: false, isCancelled: true)
        }
        guard state == "running", attempt == Int64(save.attempt), owner == worker else {
            throw LeaseError(
                jobID: jobID,
                message:
                    "job \(jobID) attempt \(save.attempt) no longer holds its lease (job is \(state), attempt \(attempt))",
                isUnknownJob: false)
        }
        // Batches commit in order, so `committed_batches` is always where a retry resumes.
        guard Int64(save.batchIndex) == committed else {
            throw LeaseError(
                jobID: jobID,
                message:
                    "job \(jobID) sent batch \(save.batchIndex) before batch \(committed); a job's saves go in order",
                isUnknownJob: false, isOutOfOrder: true)
        }
        return .held(batch: job["batch"], done: job["done"])
    }
}
