import Foundation
import GRDBSQLite
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCoordinator
import TributaryCore
import TributaryDemo

/// The `save round trip` and `saves, 16 savers` figures: contexts saving one small edit at a time (each its own
/// user's name), each `save()` timed from its call until its answer, the commit made. The coordinator is a real
/// process with no workers; the savers run in this process. One saver is a view context (`ViewContext`, following
/// the feed, as a UI's); many are contexts over one connection (`CoordinatorStore`), as a request handler's.
struct SaveRoundTripBenchmark {
    let directory: URL
    /// The coordinator's `--durability`.
    var durability = Durability.full
    /// Whether each saver edits and saves in one block of its context (`try context.save()` in `performAndWait`,
    /// on a thread of its own, as a UI's main thread does), rather than `try await context.save()` after the edit.
    var inBlock = false
    /// How the coordinator is started: alone, or as a cluster's primary with a standby.
    var launch = CoordinatorLaunch.alone

    /// What a run measured: each save's time, and the saves per second over the run (edits included).
    struct Outcome {
        let latencies: [Duration]
        let savesPerSecond: Double
    }

    /// `saves` saves shared by `savers` contexts saving at once: one view context when `savers` is 1.
    func run(saves: Int, savers: Int) async throws -> Outcome {
        let launched = try await launch.start(
            directory.appendingPathComponent("save-round-trip-\(savers)-\(durability)"),
            ["--log-level", "warning", "--durability", durability.rawValue])
        let coordinator = launched.process
        var view: ViewContext?
        var connection: CoordinatorConnection?
        do {
            var contexts: [ObjectContext] = []
            if savers == 1 {
                let started = try await ViewContext.start(
                    feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, model: DemoData.model,
                    contents: .fetched)
                view = started
                contexts = [started.context]
            } else {
                let shared = try CoordinatorConnection(endpoint: coordinator.listenEndpoint)
                connection = shared
                contexts = (0..<savers).map { _ in
                    ObjectContext(model: DemoData.model, parent: CoordinatorStore(connection: shared))
                }
            }
            for (saver, context) in contexts.enumerated() {
                try await context.perform { context in
                    try context.insert("User")["login"] = .string("editor-\(saver)")
                }
                try await context.save()
            }
            let each = max(1, saves / savers)
            let clock = ContinuousClock()
            let started = clock.now
            let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
                for context in contexts {
                    group.addTask {
                        inBlock
                            ? try await Self.editInBlocks(context, saves: each)
                            : try await Self.edit(context, saves: each)
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let elapsed = clock.now - started
            await view?.close()
            await connection?.close()
            await launched.stop()
            return Outcome(latencies: latencies, savesPerSecond: Double(each * savers) / max(elapsed.seconds, 1e-9))
        } catch {
            await view?.close()
            await connection?.close()
            await launched.stop()
            throw error
        }
    }

    /// One saver: `saves` edits of the user it inserted, each saved alone.
    private static func edit(_ context: ObjectContext, saves: Int) async throws -> [Duration] {
        var latencies: [Duration] = []
        latencies.reserveCapacity(saves)
        let clock = ContinuousClock()
        for index in 0..<saves {
            try await context.perform { context in
                context.registeredObjects.first { $0.entity.name == "User" }?["name"] = .string("edit \(index)")
            }
            let start = clock.now
            try await context.save()
            latencies.append(clock.now - start)
        }
        return latencies
    }

    /// One saver editing and saving in one block each time, on a thread of its own: `saves` saves of the user it
    /// inserted.
    private static func editInBlocks(_ context: ObjectContext, saves: Int) async throws -> [Duration] {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        var latencies: [Duration] = []
                        latencies.reserveCapacity(saves)
                        let clock = ContinuousClock()
                        let user = try context.performAndWait {
                            context.registeredObjects.first { $0.entity.name == "User" }
                        }
                        for index in 0..<saves {
                            try context.performAndWait {
                                user?["name"] = .string("edit \(index)")
                                let start = clock.now
                                try context.save()
                                latencies.append(clock.now - start)
                            }
                        }
                        return latencies
                    })
            }
            thread.start()
        }
    }

    /// The baseline's store half: one row updated and committed at a time through SQLite's C API, WAL with
    /// `synchronous` as given (FULL for the coordinator's default durability), on a store's own `User` table; each
    /// commit's time.
    static func oneRowCommits(_ count: Int, synchronous: String, in directory: URL) throws -> [Duration] {
        let path = directory.appendingPathComponent("one-row-commits-\(synchronous).sqlite").path
        try RootStore.open(path: path, model: DemoData.model).close()
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BaselineError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous)", nil, nil, nil)
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
