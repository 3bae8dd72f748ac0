import Foundation
import GRDB

/// The root writer's store (Core Data's private-queue writer context plus its persistent store): the single
/// writer of the SQLite file, which also keeps the job queue and the change history in the same file.
///
/// Opening creates the schema from the model, or checks the model against the one the store was created with
/// and applies additive changes. Every save is one transaction: the merged change set, the job's progress or
/// completion, and the history record with its sequence number.
///
/// ```swift
/// let store = try RootStore.open(path: "store.sqlite", model: model)
/// let ids = try await store.pushJobs([spec], batch: "b1")
/// ```
public final class RootStore: Sendable {
    /// The SQLite file.
    public let path: String
    /// The model the store was opened with.
    public let model: Model
    let pool: DatabasePool
    let writer: WriterState
    private let lock: StoreLock
    /// Copies the WAL into the database off the writer's thread.
    private let checkpointer: WALCheckpointer?

    private init(path: String, model: Model, pool: DatabasePool, lock: StoreLock) {
        self.path = path
        self.model = model
        self.pool = pool
        self.lock = lock
        self.checkpointer = WALCheckpointer(path: path)
        self.writer = WriterState(merger: ChangeSetMerger(model: model))
    }

    /// Opens (creating if needed) the store at `path` for `model`.
    /// - Throws: ``ModelError`` when the model is incompatible with the store; ``StoreError`` when the file
    ///   cannot be opened, belongs to another program, or another coordinator has it open.
    public static func open(path: String, model: Model) throws -> RootStore {
        let lock = try StoreLock(store: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            FetchPredicate.registerSQLFunctions(in: db)
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Secondary indexes take inserts in random order; a cache that holds their hot pages keeps a large
            // import from re-reading them (measured: the 1M-row benchmark). Only the writer gets 64 MiB; readers
            // keep SQLite's default, so the coordinator's memory stays bounded.
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = \(RootStore.cacheSizePragma)")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(WALCheckpointer.writerThresholdPages)")
            }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StoreError(.sqlite, "cannot open store \(path): \(error)")
        }
        let store = RootStore(path: path, model: model, pool: pool, lock: lock)
        try store.prepareSchema()
        return store
    }

    /// The `cache_size` pragma of the writer connection: -65536 is 64 MiB. The benchmark's baseline uses it too.
    public static let cacheSizePragma = -65_536

    /// Finalizes the writer's statements and closes the file.
    deinit { checkpointer?.stop() }

    public func close() throws {
        checkpointer?.stop()
        pool.writeWithoutTransaction { _ in
            writer.merger.finalizeStatements()
            writer.statements.finalize()
        }
        try pool.close()
        lock.release()
    }

    private func prepareSchema() throws {
        try pool.write { db in
            let userTables = try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'tributary\\_%' ESCAPE '\\'"
            )
            let hasMeta = try db.tableExists("tributary_meta")
            if !hasMeta && !userTables.isEmpty {
                throw StoreError(
                    .incompatibleStore,
                    "\(path) is a SQLite file that Tributary did not create (it has tables \(userTables.joined(separator: ", ")))"
                )
            }
            if hasMeta {
                let format = try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'") ?? 1
                guard format == Schema.format else {
                    throw StoreError(
                        .incompatibleStore,
                        "\(self.path) has store format \(format), this Tributary reads format \(Schema.format) "
                            + "(format 1 came from development builds before the first release; create the store anew)")
                }
            }
            try Schema.createSystemTables(db)
            if let storedJSON = try Data.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'model'") {
                let stored = try Model.decode(storedJSON, source: "the model stored in \(path)")
                let additions = try model.additions(over: stored)
                for entity in additions.entities { try Schema.create(entity, in: db) }
                for (entity, attribute) in additions.attributes { try Schema.add(attribute, to: entity, in: db) }
                for (entity, relationship) in additions.relationships {
                    try Schema.add(relationship, to: entity, in: db)
                }
            } else {
                for entity in model.entities { try Schema.create(entity, in: db) }
            }
            try db.execute(
                sql: "INSERT OR REPLACE INTO tributary_meta (key, value) VALUES ('model', ?), ('format', ?)",
                arguments: [model.encodedJSON(), Schema.format])
            // A new coordinator cannot vouch for leases granted by the previous one: run those jobs again,
            // resuming after their committed batches.
            try Self.requeueAfterRestart(db)
        }
    }

    /// The sequence number of the last commit, or 0.
    public func lastSequenceNumber() async throws -> UInt64 {
        try await pool.read { db in try Self.lastSequenceNumber(db) }
    }

    static func lastSequenceNumber(_ db: Database) throws -> UInt64 {
        UInt64(
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'tributary_history'")) ?? 0)
    }
}

/// State that only the store's writer touches.
final class WriterState: @unchecked Sendable {
    // @unchecked: used only inside `DatabasePool.write` closures, which GRDB runs one at a time on its writer
    // queue, so the merger and its prepared statements are never used concurrently.
    let merger: ChangeSetMerger
    let statements = WriterStatements()

    init(merger: ChangeSetMerger) {
        self.merger = merger
    }
}
