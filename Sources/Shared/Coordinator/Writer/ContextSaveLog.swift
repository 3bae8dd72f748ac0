import Foundation
import GRDB
import SwiftProtobuf
import TributaryCore
import TributaryProtocol

/// The ids of contexts' saves outside any job (`SaveChanges.save_id`), each with its first answer, written in the
/// transaction of its commit: a save retried after its answer was lost (the coordinator restarted in between
/// included) finds its id and gets that answer again instead of a second commit, as in the ZeroMQ Guide's
/// idempotent service. Ids are kept for ``retention``, then pruned by the store's maintenance.
///
/// The log (`tributary_save_log`) is keyed by (generation, save id), a generation being ``generationSeconds`` of
/// saves: a lookup reads the generations that can hold an id of the retention, and the next one (a clock stepped back
/// across a generation's start still finds what it recorded): four seeks; a save writes one page (no index of ages
/// beside the table), and pruning drops whole generations from the front of the key.
enum ContextSaveLog {
    /// How long a save's id and answer are kept at least: far longer than a client retries.
    static let retention: Duration = .seconds(24 * 3600)
    /// The span of one generation; ids are kept for up to ``retention`` plus this.
    static let generationSeconds: Double = 12 * 3600

    /// The generation of a save made at `time` (seconds since 1970).
    static func generation(at time: Double) -> Int64 {
        Int64((time / generationSeconds).rounded(.down))
    }

    /// Ids pruned per transaction; a full chunk means more is due at once.
    static let pruneChunk = 5_000

    /// The lookup of an id in four generations (?1 to ?4), the id as ?5.
    private static let lookupSQL =
        (1...4).map {
            "SELECT answer FROM tributary_save_log WHERE generation = ?\($0) AND save_id = ?5"
        }.joined(separator: " UNION ALL ") + " LIMIT 1"

    /// The answer a save with `id` was given, if the store committed it before (within the retention of `now`).
    static func earlierAnswer(of id: Data, now: Double, in db: Database, statements: WriterStatements) throws
        -> AppliedSave?
    {
        // Four point lookups in one statement: `generation IN (?, ?, ?, ?)` would build a temporary b-tree of the
        // four values on every run, which cost more than the lookups.
        let select = try statements.statement(db, lookupSQL)
        let current = generation(at: now)
        for offset in 0..<4 { select.bind(Int32(offset + 1), current - Int64(offset - 1)) }
        select.bind(5, bytes: id)
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
            db, "INSERT INTO tributary_save_log (generation, save_id, answer) VALUES (?, ?, ?)")
        insert.bind(1, generation(at: now))
        insert.bind(2, bytes: id)
        insert.bind(3, bytes: try answer.serializedBytes() as Data)
        try insert.execute()
    }

    /// Deletes up to `limit` ids of the generations that ended before `cutoff`, oldest first.
    /// - Returns: how many were deleted.
    static func prune(before cutoff: Date, limit: Int, in db: Database) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM tributary_save_log WHERE (generation, save_id) IN (
                    SELECT generation, save_id FROM tributary_save_log WHERE generation < ?
                    ORDER BY generation, save_id LIMIT ?)
                """, arguments: [generation(at: cutoff.timeIntervalSince1970), limit])
        return db.changesCount
    }
}
