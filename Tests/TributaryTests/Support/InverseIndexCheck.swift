import Foundation
import GRDB

@testable import TributaryCore

/// Compares each relationship's pairs as its tables hold them with the two halves of its inverse index.
enum InverseIndexCheck {
    /// One relationship's `destination:source` row-key pairs, sorted.
    struct Pairs {
        /// As the to-one column or the join table holds them.
        var forward: [String]
        /// As both halves of the inverse index hold them, duplicates kept (an entry in both halves shows twice).
        var inverse: [String]
        /// How many of them the recent half holds.
        var recent: Int
    }

    /// Each relationship's pairs, by `Entity.relationship`.
    static func pairs(_ db: Database, model: Model) throws -> [String: Pairs] {
        var pairs: [String: Pairs] = [:]
        for entity in model.entities {
            for relationship in entity.relationships {
                let forward =
                    relationship.isToMany
                    ? "SELECT destination, source FROM \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name)))"
                    : "SELECT \(SQLText.quote(relationship.name)), \(SQLText.rowKey) FROM \(SQLText.quote(entity.name)) "
                        + "WHERE \(SQLText.quote(relationship.name)) IS NOT NULL"
                let recent = SQLText.quote(SQLText.recentInverseTable(entity.name, relationship.name))
                let inverse = """
                    SELECT destination, source FROM \(SQLText.quote(SQLText.inverseTable(entity.name, relationship.name)))
                    UNION ALL SELECT destination, source FROM \(recent)
                    """
                func fetch(_ sql: String) throws -> [String] {
                    try Row.fetchAll(db, sql: "\(sql) ORDER BY 1, 2").map { "\($0[0] as Int64):\($0[1] as Int64)" }
                }
                pairs["\(entity.name).\(relationship.name)"] = Pairs(
                    forward: try fetch(forward), inverse: try fetch(inverse),
                    recent: try Int.fetchOne(db, sql: "SELECT count(*) FROM \(recent)") ?? 0)
            }
        }
        return pairs
    }

    /// The relationships of `model` whose inverse index differs from the pairs their tables hold, read with a
    /// connection of its own; empty when every one matches.
    static func mismatches(path: String, model: Model) throws -> [String] {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration).read { db in
            try pairs(db, model: model).filter { $0.value.forward != $0.value.inverse }.map(\.key).sorted()
        }
    }
}
