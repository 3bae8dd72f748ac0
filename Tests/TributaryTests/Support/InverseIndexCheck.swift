import Foundation
import GRDB

@testable import TributaryCore

/// Compares each relationship's pairs as its tables hold them with the two halves of its inverse index.
enum InverseIndexCheck {
    /// The relationships of `model` whose inverse index (both halves together, duplicates kept) differs from the
    /// pairs their tables hold, read with a connection of its own; empty when every one matches.
    static func mismatches(path: String, model: Model) throws -> [String] {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration).read { db in
            var mismatched: [String] = []
            for entity in model.entities {
                for relationship in entity.relationships {
                    let forward =
                        relationship.isToMany
                        ? "SELECT destination, source FROM \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name)))"
                        : "SELECT \(SQLText.quote(relationship.name)), \(SQLText.rowKey) FROM \(SQLText.quote(entity.name)) "
                            + "WHERE \(SQLText.quote(relationship.name)) IS NOT NULL"
                    let inverse = """
                        SELECT destination, source FROM \(SQLText.quote(SQLText.inverseTable(entity.name, relationship.name)))
                        UNION ALL SELECT destination, source
                        FROM \(SQLText.quote(SQLText.recentInverseTable(entity.name, relationship.name)))
                        """
                    let pairs = [forward, inverse].map { sql in
                        try? Row.fetchAll(db, sql: "\(sql) ORDER BY 1, 2").map { "\($0[0] as Int64):\($0[1] as Int64)" }
                    }
                    if pairs[0] == nil || pairs[0] != pairs[1] {
                        mismatched.append("\(entity.name).\(relationship.name)")
                    }
                }
            }
            return mismatched
        }
    }
}
