import Foundation
import GRDB
import SwiftProtobuf
import TributaryCore
import TributaryProtocol

/// The ids of contexts' saves outside any job (`SaveChanges.save_id`), each with its first answer, written in the
/// transaction of its commit: a save retried after its answer was lost (the coordinator restarted in between
/// included) finds its id and gets that answer again instead of a second commit, as in the ZeroMQ Guide's
/// idempotent service. Ids are kept for ``retention``, then pruned by the store's maintenance.
enum ContextSaveLog {
    /// How long a save's id and answer are kept: far longer than a client retries.
    static let retention: Duration = .seconds(24 * 3600)

    /// Ids pruned per transaction; a full chunk means more is due at once.
    static let pruneChunk = 5_000

    /// The answer a save with `id` was given, if the store committed it before.
    static func earlierAnswer(of id: Data, in db: Database, statements: WriterStatements) throws -> AppliedSave? {
        let select = try statements.statement(db, "SELECT answer FROM tributary_context_saves WHERE save_id = ?")
        select.bind(1, bytes: id)
        defer { select.reset() }
        guard try select.step() else { return nil }
        let answer = try Tributary_V1_SaveAck(serializedBytes: select.data(column: 0))
        return AppliedSave(
            outcome: .answeredBefore(seq: answer.seq, remaps: answer.remaps, resolved: answer.resolved), progress: nil,
            selection: answer.batchIds.isEmpty && !answer.batchMore
                ? nil : BatchSelection(ids: answer.batchIds, more: answer.batchMore))
    }

    /// Records the save `id` with what it made of the store (and, for a batch change, what it selected), in the
    /// transaction that commits it.
    static func record(
        _ id: Data, _ outcome: SaveOutcome, selection: BatchSelection?, at now: Double, in db: Database,
        statements: WriterStatements
    ) throws {
        switch outcome {
        case .duplicate, .answeredBefore: return
        case .committed, .committedEmpty: break
        }
        let answer = AppliedSave(outcome: outcome, progress: nil, selection: selection).ack
        let insert = try statements.statement(
            db, "INSERT INTO tributary_context_saves (save_id, answer, saved_at) VALUES (?, ?, ?)")
        insert.bind(1, bytes: id)
        insert.bind(2, bytes: try answer.serializedBytes() as Data)
        insert.bind(3, now)
        try insert.execute()
    }

    /// Deletes up to `limit` ids saved before `cutoff`, oldest first.
    /// - Returns: how many were deleted.
    static func prune(before cutoff: Date, limit: Int, in db: Database) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM tributary_context_saves WHERE save_id IN (
                    SELECT save_id FROM tributary_context_saves WHERE saved_at < ? ORDER BY saved_at LIMIT ?)
                """, arguments: [cutoff.timeIntervalSince1970, limit])
        return db.changesCount
    }
}
