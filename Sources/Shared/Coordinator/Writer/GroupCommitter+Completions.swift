import Foundation
import GRDB
import TributaryCore
import TributaryProtocol

/// Saves without changes (most often a job's completion) applied together: their leases are read in one query and
/// their job rows written in one statement per ``JobStore/completionChunk`` saves (``JobStore``'s lease SQL),
/// instead of two statements each.
extension GroupCommitter {
    /// Which of a group's saves take the batched path: those without changes whose job no other save of the group
    /// names (its saves then apply in order, one by one).
    static func batchable(_ saves: [(save: SaveRequest, worker: String)]) -> [Bool] {
        var saveCounts: [Int64: Int] = [:]
        for (save, _) in saves where save.jobID != 0 { saveCounts[save.jobID, default: 0] += 1 }
        return saves.map { save, _ in
            save.jobID != 0 && save.changes.batches.isEmpty && save.batchChange == nil && saveCounts[save.jobID] == 1
        }
    }

    /// Applies a batchable save from its job's lease row: refused, applied before (answered by the one-by-one path,
    /// which finds its sequence number), or held, when its row's write joins `held`.
    static func applyBatched(
        _ save: SaveRequest, from worker: String, lease row: JobStore.LeaseRow?,
        held: inout [SaveRequest],
        in db: Database, writer: WriterState, model: Model
    ) throws -> AppliedSave {
        let jobID = Int64(save.jobID)
        switch JobStore.leaseVerdict(row, save: save, jobID: jobID, worker: worker) {
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
