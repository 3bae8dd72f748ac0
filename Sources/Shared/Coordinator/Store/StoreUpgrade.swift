import Foundation
import GRDB
import Synchronization
import TributaryCore

/// Upgrades a store of an earlier format in place: each format's step is a migration of a GRDB `DatabaseMigrator`,
/// named by the format it makes (`format-6` … `format-14`), and `grdb_migrations` records the steps a store has taken.
/// The upgraded store keeps every object, version, relationship, job and history record.
///
/// The steps run inside the transaction that opens the store (`run(stored:in:path:)`), not through
/// `DatabaseMigrator.migrate(_:)`, which commits each migration in a transaction of its own: a start refused partway
/// (a step that fails, a model that does not match) thus changes nothing, and no store is left between two formats.
/// The migrator names the steps, orders them and reads what a store has applied; each step taken is recorded as
/// GRDB records it. A store of a build that kept no `grdb_migrations` has the steps its format says it took recorded
/// the first time it opens. The format in `tributary_meta` (what
/// `StoreCompatibility` reads before opening, and an older Tributary reads to refuse a newer store) and the
/// migrations recorded must agree: a store where they do not is refused rather than upgraded from a guess.
///
/// A new store is created at `Schema.format` (`Schema.createSystemTables(_:)`), every step recorded as applied. A
/// step's SQL is that of its format, kept as it is when a later format changes the same table.
///
/// The steps:
/// - `format-6`: entity tables keyed by their 16-byte id (`WITHOUT ROWID`), with to-one columns and join tables of
///   16-byte ids, become tables with an integer row key beside the unique id, whose relationships hold row keys (see
///   `Schema`). Each table is renamed aside, created anew, filled in id order, and the old one dropped; each
///   relationship gets format 6's SQLite index. A reference to an object the old store no longer had (format 5 did
///   not refuse one) cannot be kept as a row key: it is cleared, and counted in the report. Tributary's own tables
///   take format 6's layout, whichever build of format 5 wrote them.
/// - `format-7`: the job table gains its `queue` column (every job in `default`) and the index claims read by queue;
///   the batch table gains the batch callback's columns.
/// - `format-8`: the job table gains `on_parent_failure`, `schedule` and `tick`, the unique-key index also covers
///   waiting jobs, and the dependency and schedule tables appear.
/// - `format-9`: each relationship's SQLite index (`<Entity>_by_<relationship>` on a to-one column,
///   `<join>_by_destination` on a join table) is dropped and replaced by its `InverseIndex` (filled from the
///   relationship's values) and the triggers that keep it.
/// - `format-10`: the table of store epochs (`tributary_epochs`) appears, empty: the commits already in the history
///   belong to no epoch (epoch 0).
/// - `format-11`: the contexts' save ids move into the generations of `tributary_save_log`, and the history's index
///   of jobs' batches leaves out saves outside any job. The history table stays as it was (see `Schema`).
/// - `format-12`: the job table gains `uncounted`, the attempts that do not count against `max_attempts`: a hand-back
///   or a dead job's retry no longer lowers `attempt`, so that no attempt number is given twice. Each job keeps its
///   number and count (none uncounted).
/// - `format-13`: the table of paused queues (`tributary_paused_queues`) appears, empty: every queue is served as
///   before.
/// - `format-14`: the replication row (`tributary_replication`) appears, at no record: the store's history so far
///   is what a cluster's first snapshot carries.
public enum StoreUpgrade {
    /// The oldest format upgraded: formats 1 to 4 came from development builds before the first release.
    static let oldestFormat = 5

    /// The formats this Tributary upgrades on open.
    static let upgradable = Set(oldestFormat..<Schema.format)

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

    /// One step: the migration that makes format `format` of a store of the format before it.
    struct Step: Sendable {
        let format: Int
        let migrate: @Sendable (Database) throws -> Void

        /// The migration's identifier, as `grdb_migrations` records it.
        var identifier: String { StoreUpgrade.identifier(of: format) }
    }

    /// What the steps on entity tables counted, for the report.
    final class Tally: Sendable {
        struct Counts {
            var objects = 0
            /// Set by `format-6`, which copies every relationship value.
            var copied: Int?
            var indexed = 0
            var dangling = 0
        }

        let counts = Mutex(Counts())
    }

    /// The identifier of the migration that makes `format`.
    static func identifier(of format: Int) -> String { "format-\(format)" }

    /// The steps, in order, for a store whose entity tables are those of `entities` (the entities of the model it
    /// was written with); the steps on entity tables add what they do to `tally`.
    static func steps(entities: [Entity] = [], tally: Tally = Tally()) -> [Step] {
        [
            Step(format: 6) { db in try rebuildWithRowKeys(entities, tally: tally, in: db) },
            Step(format: 7, migrate: addNamedQueues),
            Step(format: 8, migrate: addDependenciesAndSchedules),
            Step(format: 9) { db in
                let indexed = try replaceRelationshipIndexes(entities, in: db)
                tally.counts.withLock { $0.indexed += indexed }
            },
            Step(format: 10, migrate: addEpochs),
            Step(format: 11, migrate: moveSaveIDsIntoGenerations),
            Step(format: 12, migrate: addUncountedAttempts),
            Step(format: 13, migrate: addPausedQueues),
            Step(format: 14, migrate: Schema.addReplicationState),
        ]
    }

    /// A migrator of `steps`: what a store has applied, and in which order the rest come. Applying them goes through
    /// ``run(stored:in:path:)``, inside the opening transaction.
    static func migrator(_ steps: [Step] = steps()) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for step in steps {
            // The store declares no foreign keys, and inside the opening transaction `foreign_keys` cannot be
            // switched: each step runs as it is.
            migrator.registerMigration(step.identifier, foreignKeyChecks: .immediate, migrate: step.migrate)
        }
        return migrator
    }

    /// Brings Tributary's tables to ``Schema/format`` inside the caller's transaction: a new file's are created at it,
    /// an earlier format's upgraded by the steps the store has not taken; either way `grdb_migrations` then records
    /// every step as applied.
    /// - Parameter stored: the entities of the model the store was written with, whose tables the steps upgrade.
    /// - Returns: what the upgrade did, or nil when the store was new or of the current format already.
    /// - Throws: ``StoreError`` (`incompatibleStore`) when the migrations the store records are not the steps its
    ///   format says it took; what a step throws.
    static func run(stored: [Entity], in db: Database, path: String) throws -> Report? {
        let started = ContinuousClock.now
        let tally = Tally()
        let steps = steps(entities: stored, tally: tally)
        let migrator = migrator(steps)
        guard try db.tableExists("tributary_meta") else {
            try Schema.createSystemTables(db)
            try record(migrator.migrations, in: db)
            return nil
        }
        let format = try Int.fetchOne(db, sql: StoreCompatibility.formatSQL) ?? 0
        let taken = steps.filter { $0.format <= format }.map(\.identifier)
        if try db.tableExists("grdb_migrations") {
            let applied = try migrator.appliedIdentifiers(db)
            guard applied == Set(taken) else {
                let listed =
                    migrator.migrations.filter(applied.contains) + applied.subtracting(migrator.migrations).sorted()
                func list(_ identifiers: [String]) -> String {
                    identifiers.isEmpty ? "none" : identifiers.joined(separator: ", ")
                }
                throw StoreError(
                    .incompatibleStore,
                    "\(path) has store format \(format) but records the migrations \(list(listed)) in grdb_migrations "
                        + "(format \(format) takes \(list(taken))); it is not upgraded from a guess")
            }
        } else {
            // A build that kept no `grdb_migrations` wrote it: its format says which steps it took.
            try record(taken, in: db)
        }
        let applied = try migrator.appliedIdentifiers(db)
        let pending = migrator.migrations.filter { !applied.contains($0) }
        guard !pending.isEmpty else { return nil }
        let byIdentifier = Dictionary(uniqueKeysWithValues: steps.map { ($0.identifier, $0) })
        for identifier in pending {
            try byIdentifier[identifier]!.migrate(db)
            try record([identifier], in: db)
        }
        let counts = tally.counts.withLock { $0 }
        return Report(
            fromFormat: format, objects: counts.objects, references: counts.copied ?? counts.indexed,
            danglingReferencesCleared: counts.dangling, duration: ContinuousClock.now - started)
    }

    /// Records `identifiers` as applied, in the table GRDB's migrator keeps.
    private static func record(_ identifiers: [String], in db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        for identifier in identifiers {
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
        }
    }
}
