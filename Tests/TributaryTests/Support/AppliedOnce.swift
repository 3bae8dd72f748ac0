import Foundation
import GRDB

@testable import TributaryProtocol

/// Checks on a store file that every object of an entity was written by exactly one commit.
enum AppliedOnce {
    /// How many objects of `entity` a commit updated after another inserted them, according to the history. An
    /// import that applied a batch twice would show its rows here (the second application is an update); so would
    /// rows whose stored version is not the commit that inserted them.
    static func rewrittenObjects(of entity: String, in db: Database) throws -> Int {
        var rewritten = Set<Data>()
        var insertedAt: [Data: Int64] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, record FROM tributary_history ORDER BY seq")
        while let row = try rows.next() {
            let seq: Int64 = row[0]
            let record = try Tributary_V1_HistoryRecord(serializedBytes: row[1] as Data)
            for part in record.parts where part.entity == entity {
                for id in chunks(part.updatedIds) { rewritten.insert(id) }
                for id in chunks(part.insertedIds) { insertedAt[id] = seq }
            }
        }
        let versions = try Row.fetchCursor(db, sql: "SELECT id, _version FROM \"\(entity)\"")
        while let row = try versions.next() {
            let id: Data = row[0]
            if insertedAt[id] != row[1] as Int64 { rewritten.insert(id) }
        }
        return rewritten.count
    }

    private static func chunks(_ ids: Data) -> [Data] {
        stride(from: 0, to: ids.count, by: 16).map { Data(ids[ids.startIndex + $0..<ids.startIndex + $0 + 16]) }
    }
}
