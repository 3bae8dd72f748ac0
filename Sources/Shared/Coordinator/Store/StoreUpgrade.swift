import Foundation
import GRDB
import TributaryCore

/// Upgrades a store of an earlier format in place, inside the transaction that opens it: nothing is changed
/// when any step fails, and the upgraded store keeps every object, version, relationship, job and history record.
///
/// Format 5 → 6: entity tables keyed by their 16-byte id (`WITHOUT ROWID`), with to-one columns and join tables of
/// 16-byte ids, become tables with an integer row key beside the unique id, whose relationships hold row keys
/// (see `Schema`). Each table is renamed aside, created anew, filled in id order, and the old one dropped.
/// A reference to an object the old store no longer had (format 5 did not refuse one) cannot be kept as a row
/// key: it is cleared, and counted in the report.
///
/// Format 6 → 7: the job table gains its `queue` column (every job in `default`) and the index claims read by
/// queue; `Schema.createSystemTables(_:)` adds them, as for a format-5 store on its way.
///
/// Format 7 → 8: the job table gains `on_parent_failure`, `schedule` and `tick`, the unique-key index also covers
/// waiting jobs, and the dependency and schedule tables appear; also done by the system tables' set-up.
///
/// Format 8 → 9: each relationship's SQLite index (`<Entity>_by_<relationship>` on a to-one column,
/// `<join>_by_destination` on a join table) is dropped and replaced by its `InverseIndex` (filled from the
/// relationship's values) and the triggers that keep it. A store of format 6 or 7 takes this step too; one of
/// format 5 gets the inverse index as its tables are rebuilt.
///
/// Format 9 → 10: the table of store epochs (`tributary_epochs`) appears, empty, from the system tables'
/// set-up; the commits already in the history belong to no epoch (epoch 0).
///
/// Format 10 → 11: the contexts' save ids move into the generations of `tributary_save_log`, and the history's index
/// of jobs' batches leaves out saves outside any job; also done by the system tables' set-up.
///
/// Format 11 → 12: the job table gains `uncounted`, the attempts that do not count against `max_attempts`: a hand-back
/// or a dead job's retry no longer lowers `attempt`, so that no attempt number is given twice. Each job keeps its
/// number and count (none uncounted); also done by the system tables' set-up.
///
/// Format 12 → 13: the table of paused queues (`tributary_paused_queues`) appears, empty, from the system tables'
/// set-up: every queue is served as before.
public enum StoreUpgrade {
    /// The formats this Tributary upgrades on open.
    static let upgradable: Set<Int> = [5, 6, 7, 8, 9, 10, 11, 12]

    /// What an upgrade did, for the coordinator's log.
    public struct Report: Sendable {
        /// The store's format before.
        public let fromFormat: Int
        /// Objects copied, over every entity.
        public let objects: Int
        /// Relationship values copied (to-one values set and join rows); from format 6 to 8, those indexed anew.
        public let references: Int
        /// References to objects the store did not have, cleared.
        public let danglingReferencesCleared: Int
        /// How long the upgrade took.
        public let duration: Duration
    }

    /// Upgrades the tables of `model` (the model the store was written with) from `format` to ``Schema/format``.
    static func run(from format: Int, model: Model, in db: Database) throws -> Report {
        guard upgradable.contains(format) else {
            throw StoreError(
                .incompatibleStore, "store format \(format) cannot be upgraded (only formats 5 to 12 can)")
        }
        let started = ContinuousClock.now
        guard format < 9 else {
            return Report(
                fromFormat: format, objects: 0, references: 0, danglingReferencesCleared: 0,
                duration: ContinuousClock.now - started)
        }
        // 6 → 7 and 7 → 8 are the job tables' alone, done by the system tables' set-up; 8 → 9 replaces the
        // relationship indexes.
        guard format == 5 else {
            let indexed = try replaceRelationshipIndexes(model, in: db)
            return Report(
                fromFormat: format, objects: 0, references: indexed, danglingReferencesCleared: 0,
                duration: ContinuousClock.now - started)
        }
        var objects = 0
        var references = 0
        var dangling = 0
        // Aside: every old table renamed, and its indexes dropped (their names are the new tables').
        for entity in model.entities {
            try db.execute(sql: "ALTER TABLE \(SQLText.quote(entity.name)) RENAME TO \(old(entity.name))")
            for (index, _) in entity.uniqueness.enumerated() {
                try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote("\(entity.name)_unique_\(index)"))")
            }
            for relationship in entity.relationships {
                if relationship.isToMany {
                    let join = SQLText.joinTable(entity.name, relationship.name)
                    try db.execute(sql: "ALTER TABLE \(SQLText.quote(join)) RENAME TO \(old(join))")
                    try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote(join + "_by_destination"))")
                } else {
                    try db.execute(
                        sql: "DROP INDEX IF EXISTS \(SQLText.quote("\(entity.name)_by_\(relationship.name)"))")
                }
            }
        }
        // Objects first (row keys in id order), then the relationships, which need every destination's key.
        for entity in model.entities {
            try Schema.createTable(entity, in: db)
            let columns = (["id", "_version"] + entity.attributes.map(\.name)).map(SQLText.quote)
                .joined(separator: ", ")
            try db.execute(
                sql: """
                    INSERT INTO \(SQLText.quote(entity.name)) (\(columns))
                    SELECT \(columns) FROM \(old(entity.name)) ORDER BY "id"
                    """)
            objects += db.changesCount
        }
        for entity in model.entities {
            let table = SQLText.quote(entity.name)
            for relationship in entity.relationships {
                let destination = SQLText.quote(relationship.destination)
                if relationship.isToMany {
                    let join = SQLText.joinTable(entity.name, relationship.name)
                    try db.execute(
                        sql: """
                            INSERT INTO \(SQLText.quote(join)) (source, destination)
                            SELECT s.\(SQLText.rowKey), d.\(SQLText.rowKey) FROM \(old(join)) AS j
                            JOIN \(table) AS s ON s."id" = j.source JOIN \(destination) AS d ON d."id" = j.destination
                            """)
                    references += db.changesCount
                    dangling += try Int.fetchOne(db, sql: "SELECT count(*) FROM \(old(join))")! - db.changesCount
                } else {
                    let column = SQLText.quote(relationship.name)
                    try db.execute(
                        sql: """
                            UPDATE \(table) SET \(column) = d.\(SQLText.rowKey)
                            FROM \(old(entity.name)) AS o JOIN \(destination) AS d ON d."id" = o.\(column)
                            WHERE o."id" = \(table)."id"
                            """)
                    references += db.changesCount
                    let stored = try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM \(old(entity.name)) WHERE \(column) IS NOT NULL")!
                    dangling += stored - db.changesCount
                }
            }
        }
        for entity in model.entities {
            for relationship in entity.relationships where relationship.isToMany {
                try db.execute(sql: "DROP TABLE \(old(SQLText.joinTable(entity.name, relationship.name)))")
            }
            try db.execute(sql: "DROP TABLE \(old(entity.name))")
            try Schema.createIndexes(entity, in: db)
        }
        return Report(
            fromFormat: format, objects: objects, references: references, danglingReferencesCleared: dangling,
            duration: ContinuousClock.now - started)
    }

    /// Format 8 → 9: each relationship's SQLite index dropped, its inverse index created and filled.
    /// - Returns: the relationship values indexed.
    private static func replaceRelationshipIndexes(_ model: Model, in db: Database) throws -> Int {
        var indexed = 0
        for entity in model.entities {
            for relationship in entity.relationships {
                let index =
                    relationship.isToMany
                    ? SQLText.joinTable(entity.name, relationship.name) + "_by_destination"
                    : "\(entity.name)_by_\(relationship.name)"
                try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote(index))")
                indexed += try InverseIndex.create(relationship, of: entity, in: db)
            }
            try InverseIndex.createTriggers(for: entity, in: db)
        }
        return indexed
    }

    /// The name a table has while it is upgraded.
    private static func old(_ table: String) -> String {
        SQLText.quote("tributary_upgrade_\(table)")
    }
}
