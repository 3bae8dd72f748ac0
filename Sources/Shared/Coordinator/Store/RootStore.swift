import Foundation
import GRDB
import TributaryCore

/// The root writer's store (Core Data's private-queue writer context plus its persistent store): the single
/// writer of the SQLite file, which also keeps the job queue and the change history in the same file.
///
/// Opening creates the schema from the model, or checks the model against the one the store was created with
/// and applies additive changes. Every save is one transaction: the merged change set, the job's progress or
/// completion, and the history record with its sequence number.
///
/// It opens, creates, upgrades and closes the file; what is stored in it is read and written through the stores
/// by capability it holds: ``jobs`` (the job engine), ``feed`` (history, snapshots, durable subscribers) and
/// `saves` (group commits, which only `StoreWriter` runs: no public API writes around it).
///
/// ```swift
/// let store = try RootStore.open(path: "store.sqlite", model: model)
/// let overview = try await store.jobs.overview()
/// try store.close()
/// ```
public final class RootStore: Sendable {
    /// The SQLite file.
    public let path: String
    /// The model the store was opened with.
    public let model: Model
    /// What a commit survives before it is acknowledged.
    public let durability: Durability
    package let pool: DatabasePool
    package let writer: WriterState
    /// The job engine's reads and writes.
    public let jobs: JobStore
    /// The change history, snapshots and durable subscribers.
    public let feed: FeedStore
    /// Group commits of saves and claims, run by `StoreWriter` (and, in this package, by tests and the bench).
    package let saves: GroupCommitter
    private let lock: StoreLock
    /// Copies the WAL into the database off the writer's thread.
    private let checkpointer: WALCheckpointer?
    /// Starts the WAL over under small writes (its hook is on the writer's connection).
    let walRestart: WALRestart

    /// The jobs the previous coordinator left running, per batch: put back in the queue (or dead, after their
    /// last attempt) when this store opened.
    public let jobsLeftRunning: [JobsLeftRunning]
    /// What opening upgraded, when the file was of an earlier store format.
    public let upgrade: StoreUpgrade.Report?
    /// The indexes the model declares that opening created, and the ones it no longer declares that opening dropped
    /// (docs/model.md, *Schema*).
    public let declaredIndexes: (created: [String], dropped: [String])

    private init(
        path: String, model: Model, durability: Durability, pool: DatabasePool, lock: StoreLock, opened: OpenedSchema,
        walRestart: WALRestart
    ) {
        self.path = path
        self.durability = durability
        self.jobsLeftRunning = opened.jobsLeftRunning
        self.upgrade = opened.upgrade
        declaredIndexes = opened.declaredIndexes
        self.model = model
        self.pool = pool
        self.lock = lock
        self.walRestart = walRestart
        self.checkpointer = WALCheckpointer(path: path, restart: walRestart)
        let writer = WriterState(
            merger: ChangeSetMerger(model: model), inverseFold: InverseFoldSchedule(emptyAt: opened.inverseEmptyAt),
            durability: durability, walRestart: walRestart)
        self.writer = writer
        jobs = JobStore(pool: pool, writer: writer)
        feed = FeedStore(pool: pool, model: model)
        saves = GroupCommitter(pool: pool, writer: writer, model: model, jobs: jobs)
    }

    /// Opens (creating if needed) the store at `path` for `model`, its commits synced as `durability` says. Jobs a
    /// previous coordinator left running are put back in the queue, unless `requeueLeftRunning` is false: a store of
    /// a cluster writes only what its records say, and a new primary puts them back through its writer
    /// (`StoreWrite.requeueLeftRunning()`), so that its standbys get that write too.
    /// - Throws: ``/TributaryCore/ModelError`` when the model is incompatible with the store;
    ///   ``/TributaryCore/StoreError`` when the file cannot be opened, belongs to another program, or another
    ///   coordinator has it open. A refused store is left byte for byte as it was.
    public static func open(
        path: String, model: Model, durability: Durability = .full, requeueLeftRunning: Bool = true
    ) throws -> RootStore {
        SQLiteProcessSettings.apply()
        ProcessMemorySettings.apply()
        // Refuse before anything writes: the lock file, the pool's switch to WAL mode and its probe table.
        try StoreCompatibility.check(model, againstFileAt: path)
        let lock = try StoreLock(store: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let walRestart = WALRestart()
        configuration.prepareDatabase { db in
            FetchPredicate.registerSQLFunctions(in: db)
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Only the writer gets a cache of its own (32 MiB); readers keep SQLite's default, so the coordinator's
            // memory stays bounded. Its size barely matters to a bulk import: pages it misses come from the OS's
            // page cache (see cacheSizePragma).
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = \(RootStore.cacheSizePragma)")
                try db.execute(sql: "PRAGMA journal_size_limit = \(WALCheckpointer.journalSizeLimit)")
                // Checkpoints at the writer's backstop as `wal_autocheckpoint` would, and starts the log over under
                // small writes; captured by this closure, it lives as long as the pool's connections.
                walRestart.install(on: db)
            }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StoreError(.sqlite, "cannot open store \(path): \(error)")
        }
        do {
            // The writer syncs as the level says (``WriterStatements`` syncs some commits at every level). Set once the
            // pool is open: opening it sets NORMAL, as GRDB does for a pool in WAL mode.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(durability.pragma)") }
        } catch {
            throw StoreError(.sqlite, "cannot open store \(path): \(error)")
        }
        let opened = try prepareSchema(
            of: pool, path: path, model: model, requeueLeftRunning: requeueLeftRunning)
        return RootStore(
            path: path, model: model, durability: durability, pool: pool, lock: lock, opened: opened,
            walRestart: walRestart)
    }

    /// The `cache_size` pragma of the writer connection: -32768 is 32 MiB. The pages the writer misses come from the
    /// OS's page cache, so a larger cache buys it no speed, small store or large; the memory it would take pays
    /// instead for more saves in flight, which make larger commits (see `WorkerConfiguration.concurrency`, and
    /// docs/benchmarks.md, 'Import').
    public static let cacheSizePragma = -32_768

    deinit { checkpointer?.stop() }

    /// Stops the background checkpointer now, for a test of what the writer's own checkpoints do alone.
    func testsOnly_stopCheckpointer() { checkpointer?.stop() }

    /// Finalizes the writer's statements and closes the file: the WAL is checkpointed into it and removed, so
    /// the file alone holds the store (a copy of it made after a stop is whole).
    public func close() throws {
        pool.writeWithoutTransaction { _ in
            writer.merger.finalizeStatements()
            writer.statements.finalize()
        }
        try pool.close()
        // Last, as SQLite's last connection to the file: it checkpoints and deletes the WAL on close. (The pool
        // closes its read-only readers after its writer, and a read-only connection closing last leaves the
        // WAL.) Without a checkpointer a read-write connection of its own does it.
        if let checkpointer {
            checkpointer.stop()
        } else {
            WALCheckpointer.closeLast(path: path)
        }
        lock.release()
    }

    /// What preparing the schema found and did.
    private struct OpenedSchema {
        let jobsLeftRunning: [JobsLeftRunning]
        let upgrade: StoreUpgrade.Report?
        let declaredIndexes: (created: [String], dropped: [String])
        /// See ``InverseFoldSchedule/init(changes:emptyAt:)``.
        let inverseEmptyAt: Int
    }

    /// Creates, upgrades or migrates the schema for `model`, creates and drops the indexes it declares, and puts back
    /// the jobs a previous coordinator left running: one transaction, so a failure changes nothing.
    private static func prepareSchema(
        of pool: DatabasePool, path: String, model: Model, requeueLeftRunning: Bool
    ) throws -> OpenedSchema {
        try pool.write { db in
            let plan = try StoreCompatibility.plan(for: model, in: db, path: path)
            // Tributary's own tables created, or upgraded with the entity tables of the model the store was written
            // with, by the migrations the store has not applied.
            var stored: [Entity] = []
            if case .upgrade(_, let written, _) = plan { stored = written.entities }
            let upgrade = try StoreUpgrade.run(stored: stored, in: db, path: path)
            switch plan {
            case .create:
                for entity in model.entities { try Schema.create(entity, in: db) }
            case .migrate(let additions), .upgrade(_, _, let additions):
                for entity in additions.entities { try Schema.create(entity, in: db) }
                for (entity, attribute) in additions.attributes { try Schema.add(attribute, to: entity, in: db) }
                for (entity, relationship) in additions.relationships {
                    try Schema.add(relationship, to: entity, in: db)
                }
                let gained = Set(additions.relationships.map(\.0.name))
                try Schema.addTriggers(for: model.entities.filter { gained.contains($0.name) }, in: db)
            }
            let declaredIndexes = try Schema.reconcileDeclaredIndexes(of: model, in: db)
            try db.execute(
                sql: "INSERT OR REPLACE INTO tributary_meta (key, value) VALUES ('model', ?), ('format', ?)",
                arguments: [model.encodedJSON(), Schema.format])
            // A new coordinator cannot vouch for leases granted by the previous one: run those jobs again,
            // resuming after their committed batches.
            let jobsLeftRunning = requeueLeftRunning ? try JobStore.requeueAfterRestart(db) : []
            return OpenedSchema(
                jobsLeftRunning: jobsLeftRunning, upgrade: upgrade, declaredIndexes: declaredIndexes,
                inverseEmptyAt: db.totalChangesCount - (try InverseIndex.recentEntries(model, in: db)))
        }
    }

}
