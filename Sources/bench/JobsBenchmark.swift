import Foundation
import GRDBSQLite
import TributaryClient
import TributaryCommandSupport
import TributaryCoordinator
import TributaryCore
import TributaryDemo

/// The jobs figure: empty (`noop`) jobs pushed and completed durably through a coordinator with local workers.
/// Its baseline is a single-process durable queue on the same SQLite settings: each job's three writes
/// (enqueue, claim, complete) through the C API, each committed as it happens. The `jobs (dashboards)` figure is
/// the same run with a ``DashboardLoad`` on the coordinator's HTTP endpoint, against the plain run.
struct JobsBenchmark {
    let jobs: Int
    let workers: Int
    /// Jobs each worker runs at once: empty jobs are all round trip, so they overlap many.
    let concurrency: Int
    let directory: URL
    /// The coordinator's `--durability`.
    var durability = Durability.full
    /// How the coordinator is started: alone, or as a cluster's primary with a standby.
    var launch = CoordinatorLaunch.alone

    /// One run's jobs/s, and the requests of the dashboard load that ran beside it (nil without one).
    struct Outcome {
        let jobsPerSecond: Double
        let dashboards: DashboardLoad.Tally?
    }

    /// Pushes the jobs to a coordinator of its own (in `name`, under `directory`) and times them until all are done.
    /// - Parameter dashboards: whether a ``DashboardLoad`` runs on the coordinator's HTTP endpoint from the first push
    ///   until the last job is done (the endpoint serves in every run).
    func run(name: String = "jobs", dashboards: Bool = false) async throws -> Outcome {
        let launched = try await launch.start(
            directory.appendingPathComponent(name),
            [
                "--workers", String(workers), "--worker-concurrency", String(concurrency), "--log-level", "warning",
                "--http", "127.0.0.1:*", "--durability", durability.rawValue,
            ])
        let coordinator = launched.process
        let log = launched.logPath
        var load: Task<DashboardLoad.Tally, Never>?
        do {
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            while try await client.status().workers.count < workers { try await Task.sleep(for: .milliseconds(20)) }
            let spec = JobSpec(kind: NoopJobHandler.kindName)
            if dashboards {
                guard let url = coordinator.httpURL.flatMap(URL.init(string:)) else {
                    throw BaselineError("the coordinator has no HTTP endpoint; see \(log)")
                }
                load = Task { await DashboardLoad(baseURL: url).run() }
            }
            let started = ContinuousClock.now
            var batch = ""
            for start in stride(from: 0, to: jobs, by: 10_000) {
                let count = min(10_000, jobs - start)
                batch = try await client.push(Array(repeating: spec, count: count), batch: batch).batch
            }
            let status = try await client.waitForBatch(batch, every: .milliseconds(20))
            let elapsed = ContinuousClock.now - started
            load?.cancel()
            let tally = await load?.value
            guard status.doneJobs == UInt64(jobs) else {
                throw BaselineError("only \(status.doneJobs) of \(jobs) jobs are done; see \(log)")
            }
            await client.close()
            await launched.stop()
            return Outcome(jobsPerSecond: Double(jobs) / elapsed.seconds, dashboards: tally)
        } catch {
            load?.cancel()
            _ = await load?.value
            await launched.stop()
            throw error
        }
    }

    /// The baseline queue: enqueue, claim and complete each job, each write its own transaction.
    func baseline() throws -> Double {
        let path = directory.appendingPathComponent("jobs-baseline.sqlite").path
        try RootStore.open(path: path, model: DemoData.model).close()
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BaselineError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db,
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = \(RootStore.cacheSizePragma)",
            nil, nil, nil)
        let statements = [
            "INSERT INTO tributary_jobs (batch, kind, arguments, payload, created_at, updated_at) VALUES ('b', 'noop', '{}', x'', 0, 0)",
            "UPDATE tributary_jobs SET state = 'running', attempt = attempt + 1, worker = 'w' WHERE id = (SELECT id FROM tributary_jobs WHERE state = 'queued' ORDER BY id LIMIT 1)",
            "UPDATE tributary_jobs SET state = 'done', worker = NULL WHERE id = ?",
        ].map { sql -> OpaquePointer? in
            var statement: OpaquePointer?
            sqlite3_prepare_v2(db, sql, -1, &statement, nil)
            return statement
        }
        defer { statements.forEach { sqlite3_finalize($0) } }
        let started = ContinuousClock.now
        for _ in 0..<jobs {
            sqlite3_step(statements[0])
            sqlite3_reset(statements[0])
            let id = sqlite3_last_insert_rowid(db)
            sqlite3_step(statements[1])
            sqlite3_reset(statements[1])
            sqlite3_bind_int64(statements[2], 1, id)
            guard sqlite3_step(statements[2]) == SQLITE_DONE else {
                throw BaselineError(String(cString: sqlite3_errmsg(db)))
            }
            sqlite3_reset(statements[2])
        }
        return Double(jobs) / (ContinuousClock.now - started).seconds
    }
}
