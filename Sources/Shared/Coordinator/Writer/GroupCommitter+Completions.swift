import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// Saves without changes (most often a job's completion) applied together: their leases are read in one query and
/// their job rows written in one statement per ``completionChunk`` saves, instead of two statements each. A job
/// row has six indexes to keep; a statement's fixed cost (a cursor on each) was most of the cost of such a save.
extension GroupCommitter {
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

    /// Which of a group's saves take the batched path: those without changes whose job no other save of the group
    /// names (its saves then apply in order, one by one).
    static func batchable(_ saves: [(save: SaveRequest, worker: String)]) -> [Bool] {
        var saveCounts: [Int64: Int] = [:]
        for (save, _) in saves where save.jobID != 0 { saveCounts[save.jobID, default: 0] += 1 }
        return saves.map { save, _ in
            save.jobID != 0 && save.changes.batches.isEmpty && save.batchChange == nil && saveCounts[save.jobID] == 1
        }
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
                WHERE tributary_jobs.id = v.column1
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
                update.bind(first + 3, (save.completesJob ? JobState.done : .running).rawValue)
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

    /// Applies a batchable save from its job's lease row: refused, applied before (answered by the one-by-one path,
    /// which finds its sequence number), or held, when its row's write joins `held`.
    static func applyBatched(
        _ save: SaveRequest, from worker: String, lease row: LeaseRow?,
        held: inout [SaveRequest],
        in db: Database, writer: WriterState, model: Model
    ) throws -> AppliedSave {
        let jobID = Int64(save.jobID)
        switch leaseVerdict(row, save: save, jobID: jobID, worker: worker) {
        case .refused(let error):
            throw error
        case .appliedBefore:
            return try apply(save, from: worker, in: db, writer: writer, model: model)
        case .held(let lease):
            // Nothing to merge: only the merge policy is checked, as a merge would.
            _ = try MergePolicy(wire: save.changes.mergePolicy)
            held.append(save)
            return applied(save, .committedEmpty(remaps: [], resolved: []), lease: lease)
        }
    }
}
