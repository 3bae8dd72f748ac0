import GRDB
import TributaryCore

/// Creates the SQLite tables for a model's entities and Tributary's own bookkeeping.
///
/// Each entity is a table keyed by an integer row key (`_rowid`, its `INTEGER PRIMARY KEY`), with its 16-byte
/// time-ordered id unique beside it, a `_version` column, one column per attribute and one per to-one relationship
/// (the destination's row key), and a unique index per uniqueness constraint. Each to-many relationship is a join
/// table `<Entity>_<relationship>(source, destination)` of row keys. Relationship indexes thus hold small integers
/// rather than pairs of 16-byte ids: their pages are what an import's commits spend their time rewriting, and
/// smaller entries make fewer pages. Row keys never leave the store; reads turn them back into ids. Each relationship
/// is indexed by destination in two tables of its own (``InverseIndex``), kept by triggers.
enum Schema {
    /// The layout of Tributary's own tables, kept in `tributary_meta` under `format`. A store of format 5 (16-byte
    /// keys in relationships), 6 (no named queues), 7 (no dependencies or schedules), 8 (relationship indexes as
    /// SQLite indexes), 9 (no store epochs), 10 (save ids by id alone), 11 (attempt numbers given again) or 12 (no
    /// paused queues) is upgraded on open by the migrations of ``StoreUpgrade``, the last of which makes this format;
    /// another format is refused with a message rather than misread.
    static let format = 14

    /// Tributary's own tables in a new store, at ``format`` (a store of an earlier format gets them from the steps of
    /// ``StoreUpgrade``).
    ///
    /// The change history is keyed by sequence number without `AUTOINCREMENT`: the writer numbers each commit (the
    /// last commit's seq + 1, see ``FeedStore/lastSequenceNumber(_:)``), so a commit does not also rewrite
    /// `sqlite_sequence`'s page. A store whose history was made with `AUTOINCREMENT` (formats 10 and before) keeps its
    /// table (rebuilding it would copy the whole history in the opening transaction, and need as much free disk
    /// again): SQLite keeps its `sqlite_sequence` row in step with the seqs written, so its commits cost that page
    /// still.
    static func createSystemTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE tributary_meta (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                -- The job queue. `uncounted`: the attempts not counted against `max_attempts` (handed back, or before
                -- a dead job's retry), so that no attempt number is given twice. `on_parent_failure`: what a failed
                -- parent does to the job (NULL: it dies); `schedule` and `tick`: the schedule firing that enqueued it.
                CREATE TABLE tributary_jobs (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    batch TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    arguments TEXT NOT NULL,
                    total INTEGER NOT NULL DEFAULT 0,
                    done INTEGER NOT NULL DEFAULT 0,
                    state TEXT NOT NULL DEFAULT \(JobState.queued.sql),
                    attempt INTEGER NOT NULL DEFAULT 0,
                    uncounted INTEGER NOT NULL DEFAULT 0,
                    committed_batches INTEGER NOT NULL DEFAULT 0,
                    worker TEXT,
                    error TEXT,
                    errors TEXT NOT NULL DEFAULT '[]',
                    max_attempts INTEGER NOT NULL DEFAULT 20,
                    backoff_base_ms INTEGER NOT NULL DEFAULT 1000,
                    backoff_cap_ms INTEGER NOT NULL DEFAULT 600000,
                    run_at REAL NOT NULL DEFAULT 0,
                    priority INTEGER NOT NULL DEFAULT 0,
                    timeout_ms INTEGER NOT NULL DEFAULT 0,
                    leased_at REAL NOT NULL DEFAULT 0,
                    unique_key TEXT,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    queue TEXT NOT NULL DEFAULT 'default',
                    on_parent_failure TEXT,
                    schedule TEXT,
                    tick REAL);
                -- Partial indexes, so that a job's state changes touch as few index entries as they can: a claim
                -- moves the job from the queued index to the running one, a completion takes it out of the
                -- running one (measured: the jobs benchmark's SQL per job drops by a third).
                CREATE INDEX tributary_jobs_running ON tributary_jobs(worker) WHERE state = \(JobState.running.sql);
                -- At most one waiting, queued or running job per unique key (pushes check first; this is the
                -- backstop).
                CREATE UNIQUE INDEX tributary_jobs_unique_live ON tributary_jobs(unique_key)
                    WHERE unique_key IS NOT NULL AND state IN (\(JobState.liveSQL));
                CREATE INDEX tributary_jobs_of_batch ON tributary_jobs(batch);
                -- A batch's dead jobs, for its status (polled while a client waits): without it, each poll read
                -- every job of the batch.
                CREATE INDEX tributary_jobs_dead ON tributary_jobs(batch, id) WHERE state = \(JobState.dead.sql);
                -- With the running, dead and queued ones, every state but done has its partial index: a status counts
                -- each from it, and done as the rest, rather than reading every job a store keeps. Jobs enter and
                -- leave these two states rarely (dependencies, cancellations), so they cost the queue nothing.
                CREATE INDEX tributary_jobs_waiting ON tributary_jobs(batch, id) WHERE state = \(JobState.waiting.sql);
                CREATE INDEX tributary_jobs_cancelled ON tributary_jobs(batch, id) WHERE state = \(JobState.cancelled.sql);
                -- A claim reads one queue at a time, in the worker's order, each by priority then age.
                CREATE INDEX tributary_jobs_queued_in ON tributary_jobs(queue, priority DESC, id)
                    WHERE state = \(JobState.queued.sql);
                -- One job per (schedule, tick), ever: the backstop of a schedule's exactly-once firing.
                CREATE UNIQUE INDEX tributary_jobs_schedule_tick ON tributary_jobs(schedule, tick)
                    WHERE schedule IS NOT NULL;
                -- Per-batch counters, kept in the same transactions as the jobs, so progress is one row to read, with
                -- the batch's callback spec (JSON) and the callback job once pushed.
                CREATE TABLE tributary_batches (
                    batch TEXT PRIMARY KEY NOT NULL,
                    total_jobs INTEGER NOT NULL DEFAULT 0,
                    done_jobs INTEGER NOT NULL DEFAULT 0,
                    dead_jobs INTEGER NOT NULL DEFAULT 0,
                    cancelled_jobs INTEGER NOT NULL DEFAULT 0,
                    total_rows INTEGER NOT NULL DEFAULT 0,
                    done_rows INTEGER NOT NULL DEFAULT 0,
                    on_complete TEXT,
                    completed_job INTEGER) WITHOUT ROWID;
                -- Payloads live apart from the hot job rows: a job row is updated on every claim and batch, and
                -- a large blob in it would be rewritten, and read past, every time.
                CREATE TABLE tributary_payloads (
                    job_id INTEGER PRIMARY KEY,
                    payload BLOB NOT NULL);
                -- A job's parents: jobs, and batches. Read by parent when one finishes, by child when it is shown.
                CREATE TABLE tributary_job_parents (
                    parent INTEGER NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (parent, child)) WITHOUT ROWID;
                CREATE INDEX tributary_job_parents_by_child ON tributary_job_parents(child);
                CREATE TABLE tributary_batch_parents (
                    batch TEXT NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (batch, child)) WITHOUT ROWID;
                CREATE INDEX tributary_batch_parents_by_child ON tributary_batch_parents(child);
                -- Named queues paused: their jobs are not claimed until they are resumed.
                CREATE TABLE tributary_paused_queues (
                    name TEXT PRIMARY KEY NOT NULL,
                    paused_at REAL NOT NULL) WITHOUT ROWID;
                CREATE TABLE tributary_schedules (
                    name TEXT PRIMARY KEY NOT NULL,
                    cron TEXT NOT NULL,
                    timezone TEXT NOT NULL,
                    missed TEXT NOT NULL,
                    job TEXT NOT NULL,
                    paused INTEGER NOT NULL DEFAULT 0,
                    next_tick REAL NOT NULL,
                    last_tick REAL,
                    last_job INTEGER,
                    fired INTEGER NOT NULL DEFAULT 0,
                    skipped INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL) WITHOUT ROWID;
                -- The change history, by sequence number (see above).
                CREATE TABLE tributary_history (
                    seq INTEGER PRIMARY KEY,
                    job_id INTEGER,
                    attempt INTEGER NOT NULL DEFAULT 0,
                    batch_index INTEGER NOT NULL DEFAULT 0,
                    worker TEXT NOT NULL DEFAULT '',
                    committed_at REAL NOT NULL,
                    record BLOB NOT NULL);
                -- A job's batches, for a batch sent again: saves outside any job (a view's) are not indexed, so a
                -- lone save writes no page of it.
                CREATE UNIQUE INDEX tributary_history_of_job ON tributary_history(job_id, batch_index)
                    WHERE job_id IS NOT NULL;
                -- Contexts' saves outside any job, by the id their sender made, with their first answer: a retry
                -- finds it (ContextSaveLog). In generations of 12 hours, pruned whole.
                CREATE TABLE tributary_save_log (
                    generation INTEGER NOT NULL,
                    save_id BLOB NOT NULL,
                    answer BLOB NOT NULL,
                    PRIMARY KEY (generation, save_id)) WITHOUT ROWID;
                -- The store's epochs: each coordinator run that committed, by its first commit (FeedStore+Epochs).
                -- Never pruned: one row per run.
                CREATE TABLE tributary_epochs (
                    first_seq INTEGER PRIMARY KEY,
                    epoch INTEGER NOT NULL UNIQUE);
                -- Durable feed subscribers: history after the lowest position is kept for them.
                CREATE TABLE tributary_subscribers (
                    name TEXT PRIMARY KEY NOT NULL,
                    position INTEGER NOT NULL,
                    updated_at REAL NOT NULL) WITHOUT ROWID;
                """)
        try addReplicationState(db)
    }

    /// The replication row (docs/failover.md): the last record of its cluster's history the store holds (its
    /// position, hash and epoch; 0 for none) and the newest leader epoch it has promised to follow. One row, written
    /// in the transaction it describes, and never itself part of a record.
    static func addReplicationState(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE tributary_replication (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    position INTEGER NOT NULL,
                    hash INTEGER NOT NULL,
                    epoch INTEGER NOT NULL,
                    promised INTEGER NOT NULL);
                INSERT INTO tributary_replication (id, position, hash, epoch, promised) VALUES (1, 0, 0, 0, 0);
                """)
    }

    static func create(_ entity: Entity, in db: Database) throws {
        try createTable(entity, in: db)
        try createIndexes(entity, in: db)
    }

    /// The entity's table and its join tables, without their secondary indexes (an upgrade fills them first).
    static func createTable(_ entity: Entity, in db: Database) throws {
        let table = SQLText.quote(entity.name)
        var columns = [
            "\(SQLText.rowKey) INTEGER PRIMARY KEY", "\"id\" BLOB NOT NULL UNIQUE",
            "\"_version\" INTEGER NOT NULL DEFAULT 1",
        ]
        columns += entity.attributes.map(columnDefinition)
        columns += entity.relationships.filter { !$0.isToMany }.map { "\(SQLText.quote($0.name)) INTEGER" }
        try db.execute(sql: "CREATE TABLE \(table) (\(columns.joined(separator: ", ")))")
        for relationship in entity.relationships where relationship.isToMany {
            try createJoinTable(relationship, of: entity, in: db)
        }
    }

    /// The entity's uniqueness indexes and its relationships' inverse index (see ``InverseIndex``), filled with what
    /// the tables hold.
    static func createIndexes(_ entity: Entity, in db: Database) throws {
        try createUniqueIndexes(entity, in: db)
        for relationship in entity.relationships {
            try InverseIndex.create(relationship, of: entity, in: db)
        }
        try InverseIndex.createTriggers(for: entity, in: db)
    }

    /// The entity's unique index per uniqueness constraint.
    static func createUniqueIndexes(_ entity: Entity, in db: Database) throws {
        let table = SQLText.quote(entity.name)
        for (index, constraint) in entity.uniqueness.enumerated() {
            let names = constraint.map(SQLText.quote).joined(separator: ", ")
            try db.execute(
                sql: "CREATE UNIQUE INDEX \(SQLText.quote("\(entity.name)_unique_\(index)")) ON \(table)(\(names))")
        }
    }

    static func add(_ attribute: Attribute, to entity: Entity, in db: Database) throws {
        try db.execute(sql: "ALTER TABLE \(SQLText.quote(entity.name)) ADD COLUMN \(columnDefinition(attribute))")
    }

    static func add(_ relationship: Relationship, to entity: Entity, in db: Database) throws {
        if relationship.isToMany {
            try createJoinTable(relationship, of: entity, in: db)
        } else {
            try db.execute(
                sql: "ALTER TABLE \(SQLText.quote(entity.name)) ADD COLUMN \(SQLText.quote(relationship.name)) INTEGER")
        }
        // Its triggers come once every relationship added to the entity exists (see ``addTriggers(for:in:)``).
        try InverseIndex.create(relationship, of: entity, in: db)
    }

    /// (Re)creates the inverse index's triggers of `entities` (entities that gained relationships), once every
    /// relationship added to them exists.
    static func addTriggers(for entities: [Entity], in db: Database) throws {
        for entity in entities { try InverseIndex.createTriggers(for: entity, in: db) }
    }

    private static func createJoinTable(_ relationship: Relationship, of entity: Entity, in db: Database) throws {
        let join = SQLText.quote(SQLText.joinTable(entity.name, relationship.name))
        try db.execute(
            sql: """
                CREATE TABLE \(join) (source INTEGER NOT NULL, destination INTEGER NOT NULL,
                    PRIMARY KEY (source, destination)) WITHOUT ROWID
                """)
    }

    private static func columnDefinition(_ attribute: Attribute) -> String {
        "\(SQLText.quote(attribute.name)) \(attribute.type.sqlType)\(attribute.isOptional ? "" : " NOT NULL")"
    }
}
