import Foundation
import GRDBSQLite
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCoordinator
import TributaryCore
import TributaryDemo

/// The `save round trip` and `saves, 16 savers` figures: view contexts saving one small edit at a time (each its own
/// user's name), each `save()` timed from its call until its answer, the commit made. The views run in this
/// process, each over a connection of its own; the coordinator is a real process with no workers.
struct SaveRoundTripBenchmark {
    let directory: URL

    /// What a run measured: each save's time, and the saves per second over the run (edits included).
    struct Outcome {
        let latencies: [Duration]
        let savesPerSecond: Double
    }

    /// `saves` saves shared by `savers` views saving at once.
    func run(saves: Int, savers: Int) async throws -> Outcome {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent("save-round-trip-\(savers)"), arguments: ["--log-level", "warning"]
        ).process
        do {
            var views: [ViewContext] = []
            for saver in 0..<savers {
                let view = try await ViewContext.start(
                    feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, model: DemoData.model,
                    contents: .fetched)
                try await view.context.perform { context in
                    try context.insert("User")["login"] = .string("editor-\(saver)")
                }
                try await view.save()
                views.append(view)
            }
            let each = max(1, saves / savers)
            let clock = ContinuousClock()
            let started = clock.now
            let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
                for view in views {
                    group.addTask { try await Self.edit(view, saves: each) }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let elapsed = clock.now - started
            for view in views { await view.close() }
            await coordinator.stop()
            return Outcome(latencies: latencies, savesPerSecond: Double(each * savers) / max(elapsed.seconds, 1e-9))
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    /// One saver: `saves` edits of the user it inserted, each saved alone.
    private static func edit(_ view: ViewContext, saves: Int) async throws -> [Duration] {
        var latencies: [Duration] = []
        latencies.reserveCapacity(saves)
        let clock = ContinuousClock()
        for index in 0..<saves {
            try await view.context.perform { context in
                context.registeredObjects.first { $0.entity.name == "User" }?["name"] = .string("edit \(index)")
            }
            let start = clock.now
            try await view.save()
            latencies.append(clock.now - start)
        }
        return latencies
    }

    /// The baseline's store half: one row updated and committed at a time through SQLite's C API, WAL with
    /// `synchronous = NORMAL`, on a store's own `User` table; each commit's time.
    static func oneRowCommits(_ count: Int, in directory: URL) throws -> [Duration] {
        let path = directory.appendingPathComponent("one-row-commits.sqlite").path
        try RootStore.open(path: path, model: DemoData.model).close()
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BaselineError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", nil, nil, nil)
        let table = "\"User\""
        var statements: [OpaquePointer?] = []
        for sql in [
            "INSERT INTO \(table) (id, login) VALUES (randomblob(16), 'editor')",
            "UPDATE \(table) SET name = ?1 WHERE login = 'editor'", "BEGIN", "COMMIT",
        ] {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
                throw BaselineError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
            }
            statements.append(statement)
        }
        defer { statements.forEach { sqlite3_finalize($0) } }
        sqlite3_step(statements[0])
        var durations: [Duration] = []
        durations.reserveCapacity(count)
        let clock = ContinuousClock()
        for index in 0..<count {
            let start = clock.now
            sqlite3_step(statements[2])
            sqlite3_reset(statements[2])
            sqlite3_bind_int64(statements[1], 1, Int64(index))
            sqlite3_step(statements[1])
            sqlite3_reset(statements[1])
            guard sqlite3_step(statements[3]) == SQLITE_DONE else {
                throw BaselineError(String(cString: sqlite3_errmsg(db)))
            }
            sqlite3_reset(statements[3])
            durations.append(clock.now - start)
        }
        return durations
    }
}
