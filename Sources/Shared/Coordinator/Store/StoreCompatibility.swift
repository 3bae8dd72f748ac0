import Foundation
import GRDB
import GRDBSQLite
import TributaryCore

/// Whether an existing SQLite file can be the root store for a model, and what opening it would migrate.
///
/// ``RootStore/open(path:model:)`` asks twice: first through a read-only connection that writes nothing, so
/// that a refused start leaves the file byte for byte as it was (opening the store's pool switches a file to WAL
/// mode and creates a probe table); then inside the migrating transaction, which is the answer that counts.
enum StoreCompatibility {
    /// What opening a store for the model changes.
    enum Plan {
        /// A new (or empty) file: every entity's tables are created.
        case create
        /// A Tributary store: the model's additions over the stored model are applied.
        case migrate(ModelAdditions)
        /// A Tributary store of an earlier format: its tables (those of `stored`, the model it was written with)
        /// are upgraded (``StoreUpgrade``), then the model's additions applied.
        case upgrade(fromFormat: Int, stored: Model, additions: ModelAdditions)
    }

    /// What a file says about itself: its tables and, for a Tributary store, its format and model.
    struct StoredSchema {
        /// Tables that are neither SQLite's nor Tributary's own.
        var userTables: [String] = []
        var hasMeta = false
        var format: Int?
        var modelJSON: Data?
    }

    static let userTablesSQL =
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'tributary\\_%' ESCAPE '\\' ORDER BY rowid"
    static let hasMetaSQL = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'tributary_meta'"
    static let formatSQL = "SELECT value FROM tributary_meta WHERE key = 'format'"
    static let modelSQL = "SELECT value FROM tributary_meta WHERE key = 'model'"

    /// Checks `stored` (the file at `path`) against `model`.
    /// - Throws: ``StoreError`` (`incompatibleStore`) for a file Tributary did not create or of another store
    ///   format; ``ModelError`` when the model changes the stored one in a way that is not additive.
    static func plan(for model: Model, stored: StoredSchema, path: String) throws -> Plan {
        guard stored.hasMeta else {
            guard stored.userTables.isEmpty else {
                throw StoreError(
                    .incompatibleStore,
                    "\(path) is a SQLite file that Tributary did not create (it has tables \(stored.userTables.joined(separator: ", ")))"
                )
            }
            return .create
        }
        let format = stored.format ?? 1
        if format > Schema.format {
            throw StoreError(
                .incompatibleStore,
                "\(path) has store format \(format), written by a newer Tributary; this one reads format \(Schema.format) "
                    + "(run the newer tributary-coordinator; do not create the store anew)")
        }
        guard format == Schema.format || StoreUpgrade.upgradable.contains(format) else {
            throw StoreError(
                .incompatibleStore,
                "\(path) has store format \(format), this Tributary reads format \(Schema.format) and upgrades "
                    + "format \(StoreUpgrade.upgradable.sorted().map(String.init).joined(separator: ", ")) "
                    + "(formats 1 to 4 came from development builds before the first release; create the store anew)")
        }
        guard let storedJSON = stored.modelJSON else { return .create }
        let storedModel = try Model.decode(storedJSON, source: "the model stored in \(path)")
        let additions = try model.additions(over: storedModel)
        return format == Schema.format
            ? .migrate(additions) : .upgrade(fromFormat: format, stored: storedModel, additions: additions)
    }

    /// ``plan(for:stored:path:)`` for the store open in `db`.
    static func plan(for model: Model, in db: Database, path: String) throws -> Plan {
        var stored = StoredSchema()
        stored.userTables = try String.fetchAll(db, sql: userTablesSQL)
        stored.hasMeta = try Int.fetchOne(db, sql: hasMetaSQL) == 1
        if stored.hasMeta {
            stored.format = try Int.fetchOne(db, sql: formatSQL)
            stored.modelJSON = try Data.fetchOne(db, sql: modelSQL)
        }
        return try plan(for: model, stored: stored, path: path)
    }

    /// Checks the file at `path` without writing to it: no journal-mode switch, no WAL or shared-memory file left
    /// behind. A missing or empty file passes (it becomes a new store).
    /// - Throws: what ``plan(for:stored:path:)`` throws; ``StoreError`` (`sqlite`) for a file SQLite cannot read.
    static func check(_ model: Model, againstFileAt path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        guard let size, size > 0 else { return }
        _ = try plan(for: model, stored: readWithoutWriting(path), path: path)
    }

    /// Reads what ``StoredSchema`` holds through a read-only connection of its own (SQLite's C API, with URI
    /// filenames enabled for this open whatever SQLite's build default).
    ///
    /// With neither a WAL nor a rollback journal beside it, the main file holds every committed change and
    /// `immutable` reads it without creating either. A leftover journal (a process stopped without closing) needs
    /// SQLite's usual read-only open, which reads it (those files exist already).
    private static func readWithoutWriting(_ path: String) throws -> StoredSchema {
        let hasJournal = ["-wal", "-journal"].contains { FileManager.default.fileExists(atPath: path + $0) }
        // Resolved against the working directory: a relative URI without `file:` would be read as a file name,
        // query and all.
        var location = URLComponents(url: URL(fileURLWithPath: path), resolvingAgainstBaseURL: true)
        location?.queryItems = [hasJournal ? .init(name: "mode", value: "ro") : .init(name: "immutable", value: "1")]
        var connection: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(location?.string ?? path, &connection, flags, nil)
        defer { sqlite3_close_v2(connection) }
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "SQLite error \(code)"
            throw StoreError(.sqlite, "cannot read store \(path): \(message)", sqliteCode: code)
        }
        do {
            var stored = StoredSchema()
            stored.userTables = try rows(userTablesSQL, connection) { $0.text(column: 0) ?? "" }
            stored.hasMeta = try rows(hasMetaSQL, connection) { $0.int64(column: 0) }.first == 1
            if stored.hasMeta {
                stored.format = try rows(formatSQL, connection) { $0.text(column: 0).flatMap { Int($0) } }.first ?? nil
                stored.modelJSON = try rows(modelSQL, connection) { $0.data(column: 0) }.first
            }
            return stored
        } catch let error as StoreError {
            throw StoreError(.sqlite, "cannot read store \(path): \(error.message)", sqliteCode: error.sqliteCode)
        }
    }

    /// Every row of `sql`, each turned into a value by `row`.
    private static func rows<T>(_ sql: String, _ connection: OpaquePointer, _ row: (SQLiteStatement) -> T) throws
        -> [T]
    {
        let statement = try SQLiteStatement(connection: connection, sql: sql)
        defer { statement.finalize() }
        var values: [T] = []
        while try statement.step() { values.append(row(statement)) }
        return values
    }
}
