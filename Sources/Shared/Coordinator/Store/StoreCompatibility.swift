import Foundation
import GRDB
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
    }

    /// Checks the schema of `db` (the file at `path`) against `model`.
    /// - Throws: ``StoreError`` (`incompatibleStore`) for a file Tributary did not create or of another store
    ///   format; ``ModelError`` when the model changes the stored one in a way that is not additive.
    static func plan(for model: Model, in db: Database, path: String) throws -> Plan {
        let userTables = try String.fetchAll(
            db,
            sql:
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'tributary\\_%' ESCAPE '\\'"
        )
        guard try db.tableExists("tributary_meta") else {
            guard userTables.isEmpty else {
                throw StoreError(
                    .incompatibleStore,
                    "\(path) is a SQLite file that Tributary did not create (it has tables \(userTables.joined(separator: ", ")))"
                )
            }
            return .create
        }
        let format = try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'") ?? 1
        guard format == Schema.format else {
            throw StoreError(
                .incompatibleStore,
                "\(path) has store format \(format), this Tributary reads format \(Schema.format) "
                    + "(format 1 came from development builds before the first release; create the store anew)")
        }
        guard let storedJSON = try Data.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'model'")
        else { return .create }
        let stored = try Model.decode(storedJSON, source: "the model stored in \(path)")
        return .migrate(try model.additions(over: stored))
    }

    /// Checks the file at `path` without writing to it: no journal-mode switch, no WAL or shared-memory file left
    /// behind. A missing or empty file passes (it becomes a new store).
    /// - Throws: what ``plan(for:in:path:)`` throws; ``StoreError`` (`sqlite`) for a file SQLite cannot read.
    static func check(_ model: Model, againstFileAt path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        guard let size, size > 0 else { return }
        // With neither a WAL nor a rollback journal beside it, the main file holds every committed change and
        // `immutable` reads it without creating either. A leftover journal (a process stopped without closing)
        // needs SQLite's usual read-only open, which reads it (the files exist already).
        let hasJournal = ["-wal", "-journal"].contains { FileManager.default.fileExists(atPath: path + $0) }
        var configuration = Configuration()
        configuration.readonly = true
        var location = URLComponents(url: URL(fileURLWithPath: path), resolvingAgainstBaseURL: false)
        location?.queryItems = hasJournal ? [.init(name: "mode", value: "ro")] : [.init(name: "immutable", value: "1")]
        do {
            let queue = try DatabaseQueue(path: location?.string ?? path, configuration: configuration)
            defer { try? queue.close() }
            _ = try queue.read { db in try plan(for: model, in: db, path: path) }
        } catch let error as DatabaseError {
            throw StoreError(.sqlite, "cannot read store \(path): \(error.message ?? "\(error)")")
        }
    }
}
