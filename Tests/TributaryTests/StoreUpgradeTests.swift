import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// Stores written before integer row keys (format 5) open upgraded, with every object, relationship and history
/// record. The fixture was written by a real coordinator of format 5 (Tests/Fixtures/store-format-5/make.sh).
@Suite("Store upgrade: format 5 → 6 (and on to 7)")
struct StoreUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/store-format-5")

    static func fixtureModelJSON() throws -> String {
        try String(contentsOf: fixture.appendingPathComponent("model.json"), encoding: .utf8)
    }

    /// A copy of the fixture store as `store.sqlite` in `directory`.
    static func copyFixture(into directory: TemporaryDirectory) throws -> String {
        let path = directory.path("store.sqlite")
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("store.sqlite").path, toPath: path)
        return path
    }

    static func readOnly(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// What the store holds, read with SQL of the layout `rowKey` names: `id` for format 5 (relationships hold
    /// ids), `_rowid` for format 6 (relationships hold row keys).
    struct Contents: Equatable {
        var users: [String] = []
        var authors: [String] = []
        var reviewers: [String] = []
        var versions: [String] = []
        var history: [String] = []
        var jobs: [String] = []

        static func read(_ path: String, rowKey: String) throws -> Contents {
            try readOnly(path).read { db in
                var contents = Contents()
                contents.users = try String.fetchAll(
                    db,
                    sql: """
                        SELECT u.login || '|' || coalesce(u.name, '-') || '|' || coalesce(m.login, '-')
                        FROM User u LEFT JOIN User m ON m.\(rowKey) = u.mentor ORDER BY u.login
                        """)
                contents.authors = try String.fetchAll(
                    db,
                    sql: """
                        SELECT p.number || '|' || p.title || '|' || p.merged || '|' || p.additions || '|'
                            || coalesce(p.score, '-') || '|' || p.createdAt || '|' || u.login
                        FROM PullRequest p JOIN User u ON u.\(rowKey) = p.author ORDER BY p.number
                        """)
                contents.reviewers = try String.fetchAll(
                    db,
                    sql: """
                        SELECT p.number || '|' || u.login FROM PullRequest_reviewers r
                        JOIN PullRequest p ON p.\(rowKey) = r.source JOIN User u ON u.\(rowKey) = r.destination
                        ORDER BY p.number, u.login
                        """)
                contents.versions = try String.fetchAll(
                    db,
                    sql: """
                        SELECT hex(id) || '|' || _version FROM User UNION ALL
                        SELECT hex(id) || '|' || _version FROM PullRequest ORDER BY 1
                        """)
                contents.history = try String.fetchAll(
                    db,
                    sql: """
                        SELECT seq || '|' || job_id || '|' || batch_index || '|' || hex(record)
                        FROM tributary_history ORDER BY seq
                        """)
                contents.jobs = try String.fetchAll(
                    db, sql: "SELECT id || '|' || state || '|' || done || '|' || batch FROM tributary_jobs ORDER BY id")
                return contents
            }
        }
    }

    @Test("a store written by the previous format opens upgraded: every object, version, relationship and record")
    func upgradeKeepsEverything() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.copyFixture(into: directory)
        let before = try Contents.read(path, rowKey: "id")
        // The fixture holds what format 5 held: 350 users (44 mentors pointing to no stored user), 2,500 pull
        // requests, 3,703 reviewer rows, 13 commits.
        #expect(before.users.count == 350 && before.authors.count == 2500 && before.reviewers.count == 3703)
        #expect(before.history.count == 13)
        let dangling = try Self.readOnly(path).read { db in
            try Int.fetchOne(
                db,
                sql:
                    "SELECT count(*) FROM User o WHERE mentor IS NOT NULL AND NOT EXISTS (SELECT 1 FROM User u WHERE u.id = o.mentor)"
            )
        }
        #expect(dangling == 44)

        let model = try Model.decode(Data(try Self.fixtureModelJSON().utf8))
        let store = try RootStore.open(path: path, model: model)
        let report = try #require(store.upgrade)
        #expect(report.fromFormat == 5)
        #expect(report.objects == 2850)
        #expect(report.danglingReferencesCleared == 44)
        #expect(report.references == 225 - 44 + 2500 + 3703)
        try store.close()

        let after = try Contents.read(path, rowKey: "_rowid")
        #expect(after == before)
        #expect(try InverseIndexCheck.mismatches(path: path, model: model).isEmpty)
        try Self.readOnly(path).read { db in
            #expect(
                try String.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'")
                    == String(Schema.format))
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(PullRequest)").map {
                "\($0["name"] as String) \($0["type"] as String)"
            }
            #expect(columns.contains("_rowid INTEGER") && columns.contains("author INTEGER"), "\(columns)")
            #expect(
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name LIKE 'tributary_upgrade%'")
                    == 0)
            #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
        }
        // Opened again, it is of the current format: nothing more to upgrade.
        let again = try RootStore.open(path: path, model: model)
        #expect(again.upgrade == nil)
        try again.close()
    }

    @Test("a coordinator upgrades the store on start, and an import then adds to it: every row once, seq going on")
    func coordinatorUpgradesAndImports() async throws {
        let directory = try TemporaryDirectory()
        _ = try Self.copyFixture(into: directory)
        // The fixture's commits are as old as the fixture: history kept by age (7 days by default) would prune them.
        let (coordinator, stopped) = try await TestCoordinator.with(
            in: directory, workers: 1, modelJSON: try Self.fixtureModelJSON(), arguments: ["--history-hours", "0"]
        ) { coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let status = try await client.finish(
                try await client.pushImport(
                    DemoData.pullRequests(count: 600, users: 400, startingAt: 3001), rowsPerJob: 200
                ).batch)
            await client.close()
            #expect(status.doneRows == 600 && status.deadJobs == 0)
            return coordinator
        }
        #expect(stopped == 0)
        let log = try String(contentsOfFile: coordinator.logPath, encoding: .utf8)
        #expect(log.contains("store upgraded to format \(Schema.format)"), "\(log)")
        let counts = try await Self.readOnly(coordinator.storePath).read { db throws -> [Int?] in
            [
                try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest"),
                try Int.fetchOne(db, sql: "SELECT count(DISTINCT number) FROM PullRequest"),
                // Every new pull request has its author.
                try Int.fetchOne(
                    db,
                    sql: "SELECT count(*) FROM PullRequest p JOIN User u ON u._rowid = p.author WHERE p.number > 3000"),
                // The users it names are found or created once each.
                try Int.fetchOne(db, sql: "SELECT count(*) - count(DISTINCT login) FROM User"),
                // The history goes on after the upgraded store's 13 commits, which stay.
                try Int.fetchOne(db, sql: "SELECT min(seq) FROM tributary_history WHERE seq > 13"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_history WHERE seq <= 13"),
            ]
        }
        #expect(counts == [3100, 3100, 600, 0, 14, 13])
    }
}

/// A store written before named queues (format 6) opens upgraded: every job in `default`, claimable again, and
/// nothing else changed. The fixture was written by a real coordinator of format 6 (Tests/Fixtures/store-format-6).
@Suite("Store upgrade: format 6 → 7")
struct QueueUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/store-format-6")

    @Test("the fixture's jobs land in `default` and its queued ones are claimed from there; users and history stay")
    func upgradesJobs() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("store.sqlite").path, toPath: path)
        let modelJSON = try String(contentsOf: Self.fixture.appendingPathComponent("model.json"), encoding: .utf8)
        let before = try await StoreUpgradeTests.readOnly(path).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try String.fetchAll(db, sql: "SELECT id || state || kind || attempt FROM tributary_jobs ORDER BY id"),
                try String.fetchAll(db, sql: "SELECT login || coalesce(name, '-') FROM User ORDER BY login"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_history")
            )
        }
        #expect(before.0 == 6, "the fixture is not a format-6 store")

        let store = try RootStore.open(path: path, model: try Model.decode(Data(modelJSON.utf8), source: "fixture"))
        #expect(store.upgrade?.fromFormat == 6)
        let after = try await store.pool.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try String.fetchAll(db, sql: "SELECT id || state || kind || attempt FROM tributary_jobs ORDER BY id"),
                try String.fetchAll(db, sql: "SELECT login || coalesce(name, '-') FROM User ORDER BY login"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_history"),
                try Set(String.fetchAll(db, sql: "SELECT queue FROM tributary_jobs"))
            )
        }
        #expect(after.0 == Schema.format)
        #expect(after.1 == before.1 && after.2 == before.2 && after.3 == before.3)
        #expect(after.2.count == 200)
        #expect(after.4 == ["default"])
        #expect(try await store.jobs.overview().queues.map(\.name) == ["default"])
        let claimed = try await store.jobs.claimJobs(for: "w1", kinds: ["report"], limit: 10)
        #expect(claimed.count == 5 && claimed.allSatisfy { $0.spec.queue == "default" })
        try store.close()
    }
}

/// A store written before dependencies and schedules (format 7) opens upgraded: its jobs as they were, its unique
/// key still held, and dependencies and schedules working. The fixture was written by a real coordinator of format 7
/// (Tests/Fixtures/store-format-7).
@Suite("Store upgrade: format 7 → 8")
struct DependencyUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/store-format-7")

    @Test("the fixture's jobs, users and history stay; its unique key still holds; a child and a schedule work")
    func upgrades() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("store.sqlite").path, toPath: path)
        let modelJSON = try String(contentsOf: Self.fixture.appendingPathComponent("model.json"), encoding: .utf8)
        @Sendable func read(_ db: Database) throws -> (Int?, [String], [String], Int?) {
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT id || state || kind || attempt || queue || coalesce(unique_key, '-') FROM tributary_jobs ORDER BY id"
                ),
                try String.fetchAll(db, sql: "SELECT login || coalesce(name, '-') FROM User ORDER BY login"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_history")
            )
        }
        let before = try await StoreUpgradeTests.readOnly(path).read { db in try read(db) }
        #expect(before.0 == 7, "the fixture is not a format-7 store")

        let store = try RootStore.open(path: path, model: try Model.decode(Data(modelJSON.utf8), source: "fixture"))
        #expect(store.upgrade?.fromFormat == 7)
        let after = try await store.pool.read { db in try read(db) }
        #expect(after.0 == Schema.format)
        #expect(after.1 == before.1 && after.2 == before.2 && after.3 == before.3)
        #expect(after.2.count == 200)
        var daily = JobSpec(kind: "report", queue: "reports")
        daily.uniqueKey = "daily"
        let duplicate = try await store.jobs.pushJobs([daily], batch: "again")
        #expect(duplicate.duplicates == [0], "the queued job's unique key is still held")
        var child = JobSpec(kind: "report")
        child.afterJobs = [1, 3]  // done, and dead
        let pushed = try await store.jobs.pushJobs([child], batch: "children").ids[0]
        #expect(try await store.jobs.job(id: pushed)?.state == .dead)
        _ = try await store.jobs.putSchedule(
            ScheduleSpec(name: "nightly", cron: "@daily", job: JobSpec(kind: "report")), replace: false)
        #expect(try await store.jobs.schedules().map(\.spec.name) == ["nightly"])
        try store.close()
    }
}

/// A store whose relationships were indexed by SQLite indexes (format 8) opens upgraded: every object, version,
/// relationship and history record as it was, each relationship's inverse index filled, the old indexes gone.
/// The fixture was written by a real coordinator of format 8 (Tests/Fixtures/store-format-8/make.sh).
@Suite("Store upgrade: format 8 → 9")
struct InverseIndexUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/store-format-8")

    @Test("the fixture's objects, relationships and history stay; the inverse index holds every relationship value")
    func upgrades() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("store.sqlite").path, toPath: path)
        let model = try Model.decode(Data(contentsOf: Self.fixture.appendingPathComponent("model.json")))
        let before = try StoreUpgradeTests.Contents.read(path, rowKey: "_rowid")
        let format = try await StoreUpgradeTests.readOnly(path).read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'")
        }
        #expect(format == 8, "the fixture is not a format-8 store")
        #expect(before.users.count == 350 && before.authors.count == 2500 && before.reviewers.count == 3703)
        let (reached, records) = try await StoreUpgradeTests.readOnly(path).read { db in
            (
                try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'tributary_history'") ?? 0,
                try Data.fetchAll(db, sql: "SELECT record FROM tributary_history ORDER BY seq")
            )
        }
        #expect(reached > 0 && !records.isEmpty)

        let store = try RootStore.open(path: path, model: model)
        #expect(store.upgrade?.fromFormat == 8)
        // The history as it was, and the sequence goes on where it was.
        #expect(try await store.feed.lastSequenceNumber() == UInt64(reached))
        let kept = try await store.pool.read { db in
            try Data.fetchAll(db, sql: "SELECT record FROM tributary_history ORDER BY seq")
        }
        #expect(kept == records)
        // Every author, mentor and review indexed anew.
        #expect(store.upgrade?.references == before.authors.count + before.reviewers.count + 225)
        // A user's delete goes through the upgraded index: its authorships and reviews cleared.
        let login = "user7"
        let (id, authored, reviewed) = try await store.pool.read { db in
            (
                try Data.fetchOne(db, sql: "SELECT id FROM User WHERE login = ?", arguments: [login])!,
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM PullRequest p JOIN User u ON u._rowid = p.author WHERE u.login = ?",
                    arguments: [login])!,
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT count(*) FROM PullRequest_reviewers r JOIN User u ON u._rowid = r.destination WHERE u.login = ?",
                    arguments: [login])!
            )
        }
        #expect(authored > 0 && reviewed > 0, "the fixture's \(login) authored and reviewed")
        try store.close()

        let after = try StoreUpgradeTests.Contents.read(path, rowKey: "_rowid")
        #expect(after == before)
        #expect(try InverseIndexCheck.mismatches(path: path, model: model).isEmpty)
        try await StoreUpgradeTests.readOnly(path).read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'") == Schema.format)
            let indexes = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%\\_by\\_%' ESCAPE '\\'")
            #expect(
                !indexes.contains("PullRequest_by_author") && !indexes.contains("PullRequest_reviewers_by_destination")
                    && !indexes.contains("User_by_mentor"), "\(indexes)")
            #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
        }

        let reopened = try RootStore.open(path: path, model: model)
        #expect(reopened.upgrade == nil)
        _ = try await reopened.saves.applySave(
            .with {
                $0.changes.batches = [
                    .with {
                        $0.entity = "User"
                        $0.operation = .delete
                        $0.ids = id
                    }
                ]
            }, from: "w1")
        let cleared = try await reopened.pool.read { db in
            [
                try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest WHERE author IS NULL"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest_reviewers"),
            ]
        }
        #expect(cleared == [authored, before.reviewers.count - reviewed])
        try reopened.close()
        #expect(try InverseIndexCheck.mismatches(path: path, model: model).isEmpty)
    }
}

/// A store of format 11 lowered a job's attempt when it was handed back; format 12 keeps the attempts not counted
/// apart (`uncounted`), so that no attempt number is given twice.
@Suite("Store upgrade: format 11 → 12")
struct UncountedAttemptsUpgradeTests {
    @Test("a job of a format-11 store keeps its attempt and its count; its next run is numbered after it")
    func jobsKeepTheirAttempts() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let id = try await Self.makeFormat11Store(at: path)

        let store = try RootStore.open(path: path, model: DemoData.model)
        defer { try? store.close() }
        #expect(store.upgrade?.fromFormat == 11)
        let (format, uncounted) = try await store.pool.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try Int.fetchOne(db, sql: "SELECT uncounted FROM tributary_jobs WHERE id = ?", arguments: [id])
            )
        }
        #expect(format == Schema.format && uncounted == 0)
        let second = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(second.attempt == 2)
        #expect(
            try await store.jobs.failJob(id: id, attempt: 2, worker: "w1", message: "boom", permanent: false)?.outcome
                == .dead, "its first attempt still counts: the second of two was its last")
    }

    @Test("a format-11 store refused on open (its model changed a type) stays of format 11, without the new column")
    func refusedOpenLeavesTheFormat() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        _ = try await Self.makeFormat11Store(at: path)
        let changed = try UncountedAttemptsUpgradeTests.modelWithChangedType()

        #expect(throws: (any Error).self) { try RootStore.open(path: path, model: changed).close() }
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let (format, columns) = try await queue.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('tributary_jobs')")
            )
        }
        #expect(format == 11)
        #expect(!columns.contains("uncounted") && columns.contains("attempt"), "\(columns)")
    }

    /// The demo model with an attribute's type changed (`additions`: int → string): a store refuses to open with it.
    static func modelWithChangedType() throws -> Model {
        try Model.decode(
            Data(
                DemoData.modelJSON.replacingOccurrences(
                    of: #"{"name": "additions", "type": "int"}"#, with: #"{"name": "additions", "type": "string"}"#
                ).utf8))
    }

    /// A store as format 11 left it (no `uncounted`) holding one job of two attempts, the first failed and due
    /// again; returns the job's id.
    static func makeFormat11Store(at path: String) async throws -> Int64 {
        let store = try RootStore.open(path: path, model: DemoData.model)
        let id = try await store.jobs.pushJobs([JobSpec(kind: "noop", maxAttempts: 2)], batch: "b").ids[0]
        let first = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        _ = try await store.jobs.failJob(
            id: id, attempt: first.attempt, worker: "w1", message: "boom", permanent: false)
        try store.close()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "UPDATE tributary_jobs SET run_at = 0") }
        try queue.close()
        try await EarlierFormat.rewind(path, to: 11)
        return id
    }
}

/// A store of format 12 had no paused queues; format 13 keeps them in `tributary_paused_queues`.
@Suite("Store upgrade: format 12 → 13")
struct PausedQueuesUpgradeTests {
    @Test("a format-12 store gains the paused-queues table, empty: its queued job is claimed as before")
    func upgradeAddsTheTable() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let id = try await Self.makeFormat12Store(at: path)

        let store = try RootStore.open(path: path, model: DemoData.model)
        defer { try? store.close() }
        #expect(store.upgrade?.fromFormat == 12)
        let (format, paused) = try await store.pool.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_paused_queues")
            )
        }
        #expect(format == Schema.format && paused == 0)
        let claims = [ClaimRequest(worker: "w1", kinds: ["noop"], limit: 8)]
        #expect(try await store.saves.queueGroupCommit([], thenClaim: claims).value.claims[0].get().map(\.id) == [id])
    }

    @Test("a format-12 store refused on open (its model changed a type) stays of format 12, without the table")
    func refusedOpenLeavesTheFormat() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        _ = try await Self.makeFormat12Store(at: path)
        let changed = try UncountedAttemptsUpgradeTests.modelWithChangedType()

        #expect(throws: (any Error).self) { try RootStore.open(path: path, model: changed).close() }
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let (format, table) = try await queue.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT value FROM tributary_meta WHERE key = 'format'"),
                try db.tableExists("tributary_paused_queues")
            )
        }
        #expect(format == 12 && !table)
    }

    /// A store as format 12 left it (no paused-queues table) holding one queued job; returns the job's id.
    static func makeFormat12Store(at path: String) async throws -> Int64 {
        let store = try RootStore.open(path: path, model: DemoData.model)
        let id = try await store.jobs.pushJobs([JobSpec(kind: "noop")], batch: "b").ids[0]
        try store.close()
        try await EarlierFormat.rewind(path, to: 12)
        return id
    }
}

/// A store of format 13 had no replication row; format 14 keeps its last record there (docs/failover.md).
@Suite("Store upgrade: format 13 → 14")
struct ReplicationRowUpgradeTests {
    @Test("a format-13 store gains the replication row at no record, and its next transaction is recorded as the first")
    func upgradeAddsTheRow() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let store13 = try RootStore.open(path: path, model: DemoData.model)
        _ = try await store13.jobs.pushJobs([JobSpec(kind: "noop")], batch: "b")
        try store13.close()
        try await EarlierFormat.rewind(path, to: 13)

        let store = try RootStore.open(path: path, model: DemoData.model)
        defer { try? store.close() }
        #expect(store.upgrade?.fromFormat == 13)
        #expect(try await store.replicationTail() == .empty)
        let records = Locked<[ReplicationRecord]>([])
        _ = try await store.startRecording(epoch: 1) { record in records.withLock { $0.append(record) } }
        _ = try await store.jobs.pushJobs([JobSpec(kind: "noop")], batch: "c")
        #expect(records.value.map(\.position) == [1])
        #expect(try await store.replicationTail() == records.value.first?.tail)
    }
}
