import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// A job's lease as saves read and write it: the attempt that holds the job, the batches it committed, its progress.
/// A save of a job is judged from its job's row (``leaseVerdict(_:save:jobID:worker:)``) and, when held, writes the
/// row's progress or completion (``writeProgress(of:now:in:statements:)``, the ``JobTransition/progress`` and
/// ``JobTransition/complete`` transitions). Saves without changes (most often a job's completion) are read and
/// written ``completionChunk`` rows per statement: a job row has six indexes to keep, and a statement's fixed cost (a
/// cursor on each) was most of the cost of such a save.
extension JobStore {
    /// Saves per batched read and write, at most.
    static let completionChunk = 64

    /// The sizes of the batched reads and writes: powers of two up to ``completionChunk``, so that a few saves
    /// (a lone job's completion, a group at low concurrency) bind and look up a few rows rather than a chunk of
    /// padding, with at most seven statements of each kind in the cache.
    static let chunkSizes = [1, 2, 4, 8, 16, 32, completionChunk]

    /// The chunks `count` items are read or written in: full chunks, then the smallest size that holds the rest
    /// (padded with ids that match no job).
    static func chunks(of count: Int) -> [(start: Int, size: Int)] {
        var chunks: [(start: Int, size: Int)] = []
        var start = 0
        while start < count {
            let size = chunkSizes.first { $0 >= count - start } ?? completionChunk
            chunks.append((start, size))
            start += size
        }
        return chunks
    }

    /// A job held by the save's attempt, as it was before the save.
    struct HeldLease {
        let batch: String
        let done: Int64
        let total: UInt64
    }

    /// A job row as a lease check reads it.
    struct LeaseRow {
        /// The columns read, in the order the initializer takes them.
        static let columns = "state, attempt, worker, committed_batches, batch, done, total"

        /// Nil for a state this version does not know (refused like any state that holds no lease).
        let state: JobState?
        let attempt: Int64
        let worker: String?
        let committedBatches: Int64
        let batch: String
        let done: Int64
        let total: Int64

        /// Reads ``columns`` from the statement's row, starting at column `first`.
        init(_ row: SQLiteStatement, from first: Int32 = 0) {
            state = row.text(column: first).flatMap(JobState.init(rawValue:))
            attempt = row.int64(column: first + 1)
            worker = row.text(column: first + 2)
            committedBatches = row.int64(column: first + 3)
            batch = row.text(column: first + 4) ?? ""
            done = row.int64(column: first + 5)
            total = row.int64(column: first + 6)
        }
    }

    /// What a job row says of a save's lease.
    enum LeaseVerdict {
        /// The save's attempt holds the job, and the save is its next batch.
        case held(HeldLease)
        /// The batch was applied before (its sequence number is in the history).
        case appliedBefore
        /// The save may not apply.
        case refused(LeaseError)
    }

    /// Judges a save's lease from its job's row, or from its absence.
    static func leaseVerdict(_ row: LeaseRow?, save: SaveRequest, jobID: Int64, worker: String)
        -> LeaseVerdict
    {
        guard let row else {
            return .refused(LeaseError(jobID: jobID, message: "job \(jobID) does not exist", isUnknownJob: true))
        }
        let state = row.state
        let committed = row.committedBatches
        if state == .done || Int64(save.batchIndex) < committed {
            // Applied before (`committed_batches` moves in the commit that records a batch's history).
            return .appliedBefore
        }
        if state == .cancelled {
            return .refused(
                LeaseError(jobID: jobID, message: "job \(jobID) was cancelled", isUnknownJob: false, isCancelled: true))
        }
        guard let state, JobTransition.progress.allows(state), row.attempt == Int64(save.attempt), row.worker == worker
        else {
            return .refused(
                LeaseError(
                    jobID: jobID,
                    message:
                        "job \(jobID) attempt \(save.attempt) no longer holds its lease (job is \(state?.rawValue ?? "in an unknown state"), attempt \(row.attempt))",
                    isUnknownJob: false))
        }
        // Batches commit in order, so `committed_batches` is always where a retry resumes.
        guard Int64(save.batchIndex) == committed else {
            return .refused(
                LeaseError(
                    jobID: jobID,
                    message:
                        "job \(jobID) sent batch \(save.batchIndex) before batch \(committed); a job's saves go in order",
                    isUnknownJob: false, isOutOfOrder: true))
        }
        return .held(HeldLease(batch: row.batch, done: row.done, total: UInt64(max(0, row.total))))
    }

    /// The lease row of one job; nil when there is no such job.
    static func leaseRow(ofJob id: Int64, in db: Database, statements: WriterStatements) throws -> LeaseRow? {
        let select = try statements.statement(db, "SELECT \(LeaseRow.columns) FROM tributary_jobs WHERE id = ?")
        select.bind(1, id)
        defer { select.reset() }
        return try select.step() ? LeaseRow(select) : nil
    }

    /// The lease rows of the jobs, read ``completionChunk`` at a time at most.
    func leaseRows(ofJobs ids: [Int64], in db: Database) throws -> [Int64: LeaseRow] {
        guard !ids.isEmpty else { return [:] }
        var rows: [Int64: LeaseRow] = [:]
        rows.reserveCapacity(ids.count)
        for (start, size) in Self.chunks(of: ids.count) {
            let select = try writer.statements.statement(db, Self.leaseRowsSQL[size]!)
            Self.bindChunk(of: ids, from: start, size: size, into: select)
            defer { select.reset() }
            while try select.step() { rows[select.int64(column: 0)] = LeaseRow(select, from: 1) }
        }
        return rows
    }

    /// Reads a chunk of jobs' lease rows, by the chunk's size.
    static let leaseRowsSQL = Dictionary(
        uniqueKeysWithValues: chunkSizes.map { size in
            (size, "SELECT id, \(LeaseRow.columns) FROM tributary_jobs WHERE id IN (\(SQLText.placeholders(size)))")
        })

    /// Writes a chunk of jobs' progress, by the chunk's size: the time, then (id, done, committed batches, state,
    /// completes) per job.
    static let progressUpdateSQL = Dictionary(
        uniqueKeysWithValues: chunkSizes.map { size in
            (
                size,
                """
                UPDATE tributary_jobs SET done = v.column2, committed_batches = v.column3, state = v.column4,
                    updated_at = ?1, worker = CASE WHEN v.column5 THEN NULL ELSE worker END
                FROM (VALUES \(Array(repeating: "(?, ?, ?, ?, ?)", count: size).joined(separator: ", "))) AS v
                WHERE tributary_jobs.id = v.column1 AND tributary_jobs.\(JobTransition.progress.whereSQL)
                """
            )
        })

    /// Deletes a chunk of jobs' payloads, by the chunk's size.
    static let payloadsDeleteSQL = Dictionary(
        uniqueKeysWithValues: chunkSizes.map { size in
            (size, "DELETE FROM tributary_payloads WHERE job_id IN (\(SQLText.placeholders(size)))")
        })

    /// Records the progress (or completion) of saves whose attempts held their jobs, ``completionChunk`` rows per
    /// statement at most. The one-by-one path writes its save's row through it too, so both write the same columns.
    static func writeProgress(
        of saves: [SaveRequest], now: Double, in db: Database, statements: WriterStatements
    ) throws {
        guard !saves.isEmpty else { return }
        try statements.requireTransaction(db)
        for (start, size) in chunks(of: saves.count) {
            let update = try statements.statement(db, progressUpdateSQL[size]!)
            update.bind(1, now)
            for offset in 0..<size {
                let first = Int32(2 + offset * 5)
                guard start + offset < saves.count else {
                    // Matches no job (ids are never negative).
                    update.bind(first, Int64(-1))
                    for column in 1...4 { update.bindNull(first + Int32(column)) }
                    continue
                }
                let save = saves[start + offset]
                update.bind(first, Int64(save.jobID))
                update.bind(first + 1, Int64(save.progressDone))
                update.bind(first + 2, Int64(save.batchIndex) + 1)
                update.bind(
                    first + 3,
                    save.completesJob
                        ? JobTransition.complete.name(entering: .done) : JobTransition.progress.name(entering: .running)
                )
                update.bind(first + 4, Int64(save.completesJob ? 1 : 0))
            }
            try update.execute()
        }
        try deletePayloads(ofJobs: saves.filter(\.completesJob).map { Int64($0.jobID) }, in: db, statements: statements)
    }

    /// Deletes the payloads of jobs that are done, ``completionChunk`` per statement at most: only a dead job runs
    /// again (`jobs retry`), so a done job's payload has served its purpose. Kept, payloads would be the largest table
    /// of an imported store, the NDJSON of every row (see docs/benchmarks.md, 'Store on disk').
    static func deletePayloads(ofJobs ids: [Int64], in db: Database, statements: WriterStatements) throws {
        guard !ids.isEmpty else { return }
        for (start, size) in chunks(of: ids.count) {
            let delete = try statements.statement(db, payloadsDeleteSQL[size]!)
            bindChunk(of: ids, from: start, size: size, into: delete)
            try delete.execute()
        }
    }

    /// Binds `size` ids from `start` to a statement's `IN (?, …)` list; ids are never negative, so -1 fills the
    /// chunk past the end.
    private static func bindChunk(of ids: [Int64], from start: Int, size: Int, into statement: SQLiteStatement) {
        for offset in 0..<size {
            let index = start + offset
            statement.bind(Int32(offset + 1), index < ids.count ? ids[index] : -1)
        }
    }

    /// Adds saves' progress to their batches' counters.
    static func record(_ batches: [BatchProgress], in db: Database, statements: WriterStatements) throws {
        let update = try statements.statement(
            db,
            "UPDATE tributary_batches SET done_rows = \(SQLText.clampedAdd("done_rows", "?1")), done_jobs = done_jobs + ?2 WHERE batch = ?3"
        )
        for progress in batches {
            update.bind(1, progress.rows)
            update.bind(2, progress.jobs)
            update.bind(3, progress.batch)
            try update.execute()
        }
    }
}
