import GRDB
import TributaryCore

/// What each step of ``StoreUpgrade`` changes; each takes a store of the format before it (whichever build of that
/// format wrote it) to the format it is named by.
extension StoreUpgrade {
    /// `format-6`: entity tables rebuilt with integer row keys, and Tributary's own tables in format 6's layout (a
    /// store of format 5 may come from a build that had not yet renamed an index or made the subscribers' table).
    static func rebuildWithRowKeys(_ entities: [Entity], tally: Tally, in db: Database) throws {
        try db.execute(
            sql: """
                DROP INDEX IF EXISTS tributary_jobs_queue;
                CREATE INDEX IF NOT EXISTS tributary_jobs_queued ON tributary_jobs(priority DESC, id)
                    WHERE state = \(JobState.queued.sql);
                CREATE INDEX IF NOT EXISTS tributary_jobs_running ON tributary_jobs(worker) WHERE state = \(JobState.running.sql);
                CREATE UNIQUE INDEX IF NOT EXISTS tributary_jobs_unique_key ON tributary_jobs(unique_key)
                    WHERE unique_key IS NOT NULL AND state IN (\(JobState.queued.sql), \(JobState.running.sql));
                DROP INDEX IF EXISTS tributary_jobs_by_batch;
                DROP INDEX IF EXISTS tributary_jobs_by_batch_state;
                CREATE INDEX IF NOT EXISTS tributary_jobs_of_batch ON tributary_jobs(batch);
                CREATE INDEX IF NOT EXISTS tributary_jobs_dead ON tributary_jobs(batch, id) WHERE state = \(JobState.dead.sql);
                CREATE UNIQUE INDEX IF NOT EXISTS tributary_history_by_job ON tributary_history(job_id, batch_index);
                CREATE TABLE IF NOT EXISTS tributary_subscribers (
                    name TEXT PRIMARY KEY NOT NULL,
                    position INTEGER NOT NULL,
                    updated_at REAL NOT NULL) WITHOUT ROWID;
                """)
        var counts = Tally.Counts(copied: 0)
        // Aside: every old table renamed, and its indexes dropped (their names are the new tables').
        for entity in entities {
            try db.execute(sql: "ALTER TABLE \(SQLText.quote(entity.name)) RENAME TO \(old(entity.name))")
            for (index, _) in entity.uniqueness.enumerated() {
                try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote("\(entity.name)_unique_\(index)"))")
            }
            for relationship in entity.relationships {
                try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote(sqliteIndex(relationship, of: entity)))")
                if relationship.isToMany {
                    let join = SQLText.joinTable(entity.name, relationship.name)
                    try db.execute(sql: "ALTER TABLE \(SQLText.quote(join)) RENAME TO \(old(join))")
                }
            }
        }
        // Objects first (row keys in id order), then the relationships, which need every destination's key.
        for entity in entities {
            try Schema.createTable(entity, in: db)
            let columns = (["id", "_version"] + entity.attributes.map(\.name)).map(SQLText.quote)
                .joined(separator: ", ")
            try db.execute(
                sql: """
                    INSERT INTO \(SQLText.quote(entity.name)) (\(columns))
                    SELECT \(columns) FROM \(old(entity.name)) ORDER BY "id"
                    """)
            counts.objects += db.changesCount
        }
        for entity in entities {
            let table = SQLText.quote(entity.name)
            for relationship in entity.relationships {
                let destination = SQLText.quote(relationship.destination)
                let copied: Int
                let stored: Int
                if relationship.isToMany {
                    let join = SQLText.joinTable(entity.name, relationship.name)
                    try db.execute(
                        sql: """
                            INSERT INTO \(SQLText.quote(join)) (source, destination)
                            SELECT s.\(SQLText.rowKey), d.\(SQLText.rowKey) FROM \(old(join)) AS j
                            JOIN \(table) AS s ON s."id" = j.source JOIN \(destination) AS d ON d."id" = j.destination
                            """)
                    copied = db.changesCount
                    stored = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(old(join))")!
                } else {
                    let column = SQLText.quote(relationship.name)
                    try db.execute(
                        sql: """
                            UPDATE \(table) SET \(column) = d.\(SQLText.rowKey)
                            FROM \(old(entity.name)) AS o JOIN \(destination) AS d ON d."id" = o.\(column)
                            WHERE o."id" = \(table)."id"
                            """)
                    copied = db.changesCount
                    stored = try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM \(old(entity.name)) WHERE \(column) IS NOT NULL")!
                }
                counts.copied! += copied
                counts.dangling += stored - copied
            }
        }
        for entity in entities {
            for relationship in entity.relationships where relationship.isToMany {
                try db.execute(sql: "DROP TABLE \(old(SQLText.joinTable(entity.name, relationship.name)))")
            }
            try db.execute(sql: "DROP TABLE \(old(entity.name))")
            try Schema.createUniqueIndexes(entity, in: db)
            for relationship in entity.relationships {
                let (table, column) =
                    relationship.isToMany
                    ? (SQLText.joinTable(entity.name, relationship.name), "destination")
                    : (entity.name, relationship.name)
                try db.execute(
                    sql: """
                        CREATE INDEX \(SQLText.quote(sqliteIndex(relationship, of: entity)))
                        ON \(SQLText.quote(table))(\(SQLText.quote(column)))
                        """)
            }
        }
        tally.counts.withLock { $0 = counts }
    }

    /// `format-7`: named queues (the claim index reads by queue) and batch callbacks.
    static func addNamedQueues(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE tributary_jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
                DROP INDEX IF EXISTS tributary_jobs_queued;
                CREATE INDEX tributary_jobs_queued_in ON tributary_jobs(queue, priority DESC, id)
                    WHERE state = \(JobState.queued.sql);
                ALTER TABLE tributary_batches ADD COLUMN on_complete TEXT;
                ALTER TABLE tributary_batches ADD COLUMN completed_job INTEGER;
                """)
    }

    /// `format-8`: dependencies (a job's parents, what a failed parent does to it, a unique key held by a waiting job
    /// too) and schedules.
    static func addDependenciesAndSchedules(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE tributary_jobs ADD COLUMN on_parent_failure TEXT;
                ALTER TABLE tributary_jobs ADD COLUMN schedule TEXT;
                ALTER TABLE tributary_jobs ADD COLUMN tick REAL;
                DROP INDEX IF EXISTS tributary_jobs_unique_key;
                CREATE UNIQUE INDEX tributary_jobs_unique_live ON tributary_jobs(unique_key)
                    WHERE unique_key IS NOT NULL AND state IN (\(JobState.liveSQL));
                CREATE TABLE tributary_job_parents (
                    parent INTEGER NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (parent, child)) WITHOUT ROWID;
                CREATE INDEX tributary_job_parents_by_child ON tributary_job_parents(child);
                CREATE TABLE tributary_batch_parents (
                    batch TEXT NOT NULL, child INTEGER NOT NULL, PRIMARY KEY (batch, child)) WITHOUT ROWID;
                CREATE INDEX tributary_batch_parents_by_child ON tributary_batch_parents(child);
                CREATE UNIQUE INDEX tributary_jobs_schedule_tick ON tributary_jobs(schedule, tick)
                    WHERE schedule IS NOT NULL;
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
                """)
    }

    /// `format-9`: each relationship's SQLite index replaced by its inverse index.
    /// - Returns: the relationship values indexed.
    static func replaceRelationshipIndexes(_ entities: [Entity], in db: Database) throws -> Int {
        var indexed = 0
        for entity in entities {
            for relationship in entity.relationships {
                try db.execute(sql: "DROP INDEX IF EXISTS \(SQLText.quote(sqliteIndex(relationship, of: entity)))")
                indexed += try InverseIndex.create(relationship, of: entity, in: db)
            }
            try InverseIndex.createTriggers(for: entity, in: db)
        }
        return indexed
    }

    /// `format-10`: store epochs. Every store of format 10 also has the partial indexes of waiting and cancelled
    /// jobs, which builds of format 9 added on the way.
    static func addEpochs(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE tributary_epochs (first_seq INTEGER PRIMARY KEY, epoch INTEGER NOT NULL UNIQUE);
                CREATE INDEX IF NOT EXISTS tributary_jobs_waiting ON tributary_jobs(batch, id) WHERE state = \(JobState.waiting.sql);
                CREATE INDEX IF NOT EXISTS tributary_jobs_cancelled ON tributary_jobs(batch, id) WHERE state = \(JobState.cancelled.sql);
                """)
    }

    /// `format-11`: the save-id log in generations, and the history's index of jobs' batches without the saves
    /// outside any job. Builds of format 9 and 10 kept save ids by id alone (`tributary_context_saves`), or had no
    /// save ids yet, or already had the log and the index: each is taken as it is.
    ///
    /// The history table made with `AUTOINCREMENT` stays (see `Schema`); should its history have been pruned to
    /// nothing without the pruned point recorded, the sequence it reached is recorded as that point.
    static func moveSaveIDsIntoGenerations(_ db: Database) throws {
        try db.execute(
            sql: """
                DROP INDEX IF EXISTS tributary_history_by_job;
                CREATE UNIQUE INDEX IF NOT EXISTS tributary_history_of_job ON tributary_history(job_id, batch_index)
                    WHERE job_id IS NOT NULL;
                CREATE TABLE IF NOT EXISTS tributary_save_log (
                    generation INTEGER NOT NULL,
                    save_id BLOB NOT NULL,
                    answer BLOB NOT NULL,
                    PRIMARY KEY (generation, save_id)) WITHOUT ROWID;
                """)
        if try db.tableExists("tributary_context_saves") {
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO tributary_save_log (generation, save_id, answer)
                        SELECT CAST(saved_at / ? AS INTEGER), save_id, answer FROM tributary_context_saves;
                    DROP TABLE tributary_context_saves;
                    """, arguments: [ContextSaveLog.generationSeconds])
        }
        guard
            let reached = try Int64.fetchOne(
                db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'tributary_history'")
        else { return }
        let kept = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? 0
        let pruned =
            try Int64.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'history_pruned_through'") ?? 0
        if reached > max(kept, pruned) {
            try db.execute(
                sql: "INSERT OR REPLACE INTO tributary_meta (key, value) VALUES ('history_pruned_through', ?)",
                arguments: [reached])
        }
    }

    /// `format-12`: the attempts not counted against `max_attempts` (handed back, or before a dead job's retry) kept
    /// apart; every job has none.
    static func addUncountedAttempts(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE tributary_jobs ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0")
    }

    /// `format-13`: paused queues; none is.
    static func addPausedQueues(_ db: Database) throws {
        try db.execute(
            sql:
                "CREATE TABLE tributary_paused_queues (name TEXT PRIMARY KEY NOT NULL, paused_at REAL NOT NULL) WITHOUT ROWID"
        )
    }

    /// The SQLite index of a relationship by destination, in formats 5 to 8.
    private static func sqliteIndex(_ relationship: Relationship, of entity: Entity) -> String {
        relationship.isToMany
            ? SQLText.joinTable(entity.name, relationship.name) + "_by_destination"
            : "\(entity.name)_by_\(relationship.name)"
    }

    /// The name a table has while it is upgraded.
    private static func old(_ table: String) -> String {
        SQLText.quote("tributary_upgrade_\(table)")
    }
}
