import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// The store's format steps are the migrations of a GRDB `DatabaseMigrator` (`format-6` … the current format),
/// applied inside the opening transaction and recorded in `grdb_migrations`: a store of every fixture format takes
/// each later one and ends with the tables a new store has; a new store records them all; a step that fails, or
/// migrations that disagree with the recorded format, leave the store as it was.
@Suite("Store upgrade: format steps as migrations")
struct StoreMigrationTests {
    static func fixture(_ format: Int) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/store-format-\(format)")
    }

    /// A copy of the fixture store of `format` in `directory`, and the model it was written with.
    static func copyFixture(_ format: Int, into directory: TemporaryDirectory) throws -> (path: String, model: Model) {
        let path = directory.path("store.sqlite")
        try FileManager.default.copyItem(
            atPath: fixture(format).appendingPathComponent("store.sqlite").path, toPath: path)
        let model = try Model.decode(Data(contentsOf: fixture(format).appendingPathComponent("model.json")))
        return (path, model)
    }

    /// What `grdb_migrations` holds (nil without the table), and the format `tributary_meta` records.
    static func recorded(_ path: String) throws -> (migrations: [String]?, format: Int?) {
        try StoreUpgradeTests.readOnly(path).read { db in
            (
                try db.tableExists("grdb_migrations")
                    ? String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") : nil,
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'")
            )
        }
    }

    /// A store's tables as SQLite describes them, in an order that does not depend on how they came to be: each
    /// table's columns by name (a column added by `ALTER TABLE` comes last), its primary key and whether it has row
    /// ids; each index's and trigger's SQL with its white space collapsed.
    static func layout(_ path: String) throws -> [String] {
        try StoreUpgradeTests.readOnly(path).read { db in
            var layout: [String] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
            {
                let (type, name, sql): (String, String, String) = (row["type"], row["name"], row["sql"])
                guard type == "table" else {
                    let words = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    layout.append("\(type) \(name): \(words)")
                    continue
                }
                let columns = try Row.fetchAll(db, sql: "SELECT * FROM pragma_table_info(?)", arguments: [name]).map {
                    "\($0["name"] as String) \($0["type"] as String) notnull=\($0["notnull"] as Int) "
                        + "default=\(($0["dflt_value"] as String?) ?? "-") pk=\($0["pk"] as Int)"
                }
                let rowid = sql.uppercased().contains("WITHOUT ROWID") ? "without rowid" : "rowid"
                layout.append("table \(name) \(rowid): \(columns.sorted().joined(separator: ", "))")
            }
            return layout
        }
    }

    @Test("the migrator's steps make the current format, one per format from the oldest upgraded")
    func steps() {
        let migrator = StoreUpgrade.migrator()
        #expect(migrator.migrations == (StoreUpgrade.oldestFormat + 1...Schema.format).map { "format-\($0)" })
        #expect(StoreUpgrade.upgradable == Set(StoreUpgrade.oldestFormat..<Schema.format))
    }

    @Test("a new store is created at the current format with every migration recorded as applied")
    func newStore() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let store = try RootStore.open(path: path, model: DemoData.model)
        #expect(store.upgrade == nil)
        let migrator = StoreUpgrade.migrator()
        let (completed, superseded) = try await store.pool.read { db in
            (try migrator.hasCompletedMigrations(db), try migrator.hasBeenSuperseded(db))
        }
        #expect(completed && !superseded)
        try store.close()
        let recorded = try Self.recorded(path)
        #expect(recorded.migrations == migrator.migrations && recorded.format == Schema.format)
    }

    @Test(
        "a store of each fixture format upgrades through the migrator: every migration then recorded, the tables a new store's",
        arguments: [5, 6, 7, 8])
    func fixtureUpgrades(format: Int) async throws {
        let directory = try TemporaryDirectory()
        let (path, model) = try Self.copyFixture(format, into: directory)
        let before = try Self.recorded(path)
        #expect(before.format == format && before.migrations == nil, "the fixture is not a format-\(format) store")

        let store = try RootStore.open(path: path, model: model)
        #expect(store.upgrade?.fromFormat == format)
        let migrator = StoreUpgrade.migrator()
        let (completed, applied) = try await store.pool.read { db in
            (try migrator.hasCompletedMigrations(db), try migrator.appliedMigrations(db))
        }
        #expect(completed && applied == migrator.migrations)
        try store.close()
        let after = try Self.recorded(path)
        #expect(after.migrations == migrator.migrations && after.format == Schema.format)

        let fresh = directory.path("new.sqlite")
        try RootStore.open(path: fresh, model: model).close()
        let (upgraded, created) = (try Self.layout(path), try Self.layout(fresh))
        #expect(
            upgraded == created,
            "upgraded only: \(upgraded.filter { !created.contains($0) }); new only: \(created.filter { !upgraded.contains($0) })"
        )

        let again = try RootStore.open(path: path, model: model)
        #expect(again.upgrade == nil)
        try again.close()
        #expect(try Self.recorded(path).migrations == migrator.migrations)
    }

    @Test("a step that fails undoes the steps before it: the store keeps its format and tables, nothing recorded")
    func failedStepChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        let (path, model) = try Self.copyFixture(7, into: directory)
        // A column of format 12 already there: `format-8` to `format-11` run, then `format-12` fails.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "ALTER TABLE tributary_jobs ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0")
        }
        try queue.close()
        let layout = try Self.layout(path)

        #expect(throws: (any Error).self) { try RootStore.open(path: path, model: model).close() }
        let after = try Self.recorded(path)
        #expect(after.format == 7 && after.migrations == nil)
        #expect(try Self.layout(path) == layout)
    }

    @Test("a store whose recorded migrations are not those of its format is refused, and left as it was")
    func disagreeingMigrationsRefused() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try RootStore.open(path: path, model: DemoData.model).close()
        let migrator = StoreUpgrade.migrator()
        for change in [
            "DELETE FROM grdb_migrations WHERE identifier = 'format-\(Schema.format)'",
            "INSERT INTO grdb_migrations (identifier) VALUES ('format-\(Schema.format + 1)')",
        ] {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(sql: "DELETE FROM grdb_migrations")
                for identifier in migrator.migrations {
                    try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
                }
                try db.execute(sql: change)
            }
            try queue.close()
            let before = try Self.recorded(path)

            let error = try #require(throws: StoreError.self) { try RootStore.open(path: path, model: DemoData.model) }
            #expect(error.code == .incompatibleStore)
            #expect(error.message.contains("grdb_migrations"), "\(error.message)")
            let after = try Self.recorded(path)
            #expect(after.migrations == before.migrations && after.format == Schema.format)
        }
    }
}

/// Makes a closed store of the current format look as a build of an earlier format (9 to 12) left it, as far as
/// Tributary's own tables go: the tables and columns later formats added taken away, the earlier format recorded, and
/// no `grdb_migrations` (those builds kept none).
enum EarlierFormat {
    static func rewind(_ path: String, to format: Int) async throws {
        precondition((9..<Schema.format).contains(format), "a store's entity tables are not rewound")
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            if format < 14 { try db.execute(sql: "DROP TABLE tributary_replication") }
            if format < 13 { try db.execute(sql: "DROP TABLE tributary_paused_queues") }
            if format < 12 { try db.execute(sql: "ALTER TABLE tributary_jobs DROP COLUMN uncounted") }
            if format < 10 { try db.execute(sql: "DROP TABLE tributary_epochs") }
            try db.execute(sql: "UPDATE tributary_meta SET value = ? WHERE key = 'format'", arguments: [format])
            try db.execute(sql: "DROP TABLE grdb_migrations")
        }
        try queue.close()
    }
}
