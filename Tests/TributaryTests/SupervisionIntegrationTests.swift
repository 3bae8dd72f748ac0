import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryDemo

@Suite("Integration: local worker pool supervision", .serialized)
struct SupervisionIntegrationTests {
    @Test("a pool worker killed with SIGKILL mid-import is replaced, and the import still lands exactly once")
    func killedWorkerIsReplaced() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 4_000, users: 80)
        let (status, exitStatus) = try await TestCoordinator.with(in: directory, workers: 2) { coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            try await waitUntil("both pool workers to register") { try await client.status().workers.count == 2 }
            let victim = try await client.status().workers[0].pid

            // Jobs of 1 batch each; killing a worker mid-import leaves one of them leased to a dead process.
            let pushed = try await client.pushImport(input, rowsPerJob: 100)
            kill(victim, SIGKILL)

            // The supervisor starts a replacement: two workers again, none of them the victim.
            try await waitUntil("a replacement worker") {
                let pids = try await client.status().workers.map(\.pid)
                return pids.count == 2 && !pids.contains(victim)
            }
            let status = try await client.finish(pushed.batch)
            await client.close()
            return status
        }
        #expect(exitStatus == 0)
        #expect(status.doneJobs == 40 && status.deadJobs == 0 && status.doneRows == 4_000)
        try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 4_000)
            // Applied once: a batch applied twice would have updated its rows.
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let users = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User")
            #expect(users == (try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT login) FROM User")))
            // Every job committed exactly its one batch, once.
            let history = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_history")
            #expect(history == 40)
        }
    }

    @Test("pool workers stop by themselves when their coordinator is killed with SIGKILL")
    func orphanedWorkersStop() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        try await waitUntil("both pool workers to register") { try await client.status().workers.count == 2 }
        let workers = try await client.status().workers.map(\.pid)
        await client.close()
        kill(coordinator.process.pid, SIGKILL)
        try await waitUntil("the orphaned workers to exit", timeout: .seconds(20)) {
            !workers.contains(where: Self.isAlive)
        }
        await coordinator.process.stop()
    }

    @Test(
        "a pool's jobs run at background priority (nice 10) so the store's writer never waits for them; --worker-priority default leaves them at 0",
        arguments: [nil, "default"])
    func poolPriority(option: String?) async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 1, arguments: option.map { ["--worker-priority", $0] } ?? [])
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        try await waitUntil("the pool worker to register") { try await client.status().workers.count == 1 }
        let worker = try await client.status().workers[0].pid
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 20_000, users: 400), rowsPerJob: 1_000)
        let status = try await client.finish(pushed.batch)
        // Read before the pool's idle threads end (libdispatch keeps them 5 s).
        let threads = Self.threads(of: worker)
        await client.close()
        await coordinator.process.stop()
        #expect(status.doneRows == 20_000)
        let background = threads.filter { $0.nice == 10 }.reduce(0) { $0 + $1.cpuTicks }
        let others = threads.filter { $0.nice != 10 }.reduce(0) { $0 + $1.cpuTicks }
        if option == nil {
            #expect(background > others, "\(threads)")
        } else {
            #expect(background == 0 && others > 0, "\(threads)")
        }
    }

    /// Each thread of process `pid`: its nice value and the CPU it used (user and system, in clock ticks).
    static func threads(of pid: Int32) -> [(nice: Int, cpuTicks: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 17,
                let user = Int(fields[11]), let system = Int(fields[12]), let nice = Int(fields[16])
            else { return nil }
            return (nice, user + system)
        }
    }

    /// Whether `pid` runs (a zombie left for a reaper counts as exited).
    static func isAlive(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        let state = stat.split(separator: ")").last?.split(separator: " ").first
        return state != "Z"
    }

    @Test("a pool worker that keeps exiting at once is restarted with backoff and reported as crash looping")
    func crashLoopReported() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 1, arguments: ["--worker-path", "/bin/false"])
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        try await waitUntil("the pool to be reported crash looping", timeout: .seconds(30)) {
            try await client.status().pool.first?.crashLooping == true
        }
        let process = try #require(try await client.status().pool.first)
        #expect(process.name == "pool-1" && process.restarts >= 3 && process.lastExitStatus == 1)
        let text = try await Binaries.run("tributary", ["status", "--listen", coordinator.process.listenEndpoint])
        #expect(text.output.contains("pool      pool-1  CRASH LOOP"), "\(text.output)")
        await client.close()
        #expect(await coordinator.process.stop() == 0)
    }
}

extension SupervisionIntegrationTests {
    @Test("a pool worker with a job in flight stops within seconds when its coordinator is killed with SIGKILL")
    func orphanedWorkerWithJobStops() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        try await waitUntil("the pool worker to register") { try await client.status().workers.count == 1 }
        let worker = try #require(try await client.status().workers.first?.pid)
        // One job of many batches: killed once its first batch committed, it has more saves to send.
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 60_000, users: 500), rowsPerJob: 60_000)
        try await waitUntil("the job's first batch") { try await client.batchStatus(pushed.batch).doneRows > 0 }
        await client.close()
        kill(coordinator.process.pid, SIGKILL)
        // Its save now goes unanswered: the worker must not wait out the save's timeout (a minute).
        try await waitUntil("the orphaned worker to exit", timeout: .seconds(15)) { !Self.isAlive(worker) }
    }

    @Test(
        "SIGTERM to the coordinator: a pool worker's job still running after --drain-seconds is interrupted and handed back by the worker, without counting an attempt, its committed rows kept once"
    )
    func poolWorkerHandsBackAtDrainEnd() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 1, arguments: ["--drain-seconds", "0"])
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        try await waitUntil("the pool worker to register") { try await client.status().workers.count == 1 }
        // One job of many batches, far from done when the stop comes: with no drain time, the pool worker
        // interrupts it as soon as it is told to stop.
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 60_000, users: 500), rowsPerJob: 60_000)
        try await waitUntil("the job's first batch") { try await client.batchStatus(pushed.batch).doneRows > 0 }
        await client.close()
        #expect(await coordinator.process.stop() == 0)

        let store = try RootStore.open(path: coordinator.storePath, model: DemoData.model)
        let job = try #require(try await store.jobs.job(id: pushed.ids[0]))
        #expect(job.state == .queued, "interrupted at the end of the drain rather than run on to its end")
        #expect(job.attemptsCounted == 0 && job.errors.isEmpty, "a stop costs the job no attempt")
        let rows = try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") }
        #expect(rows == Int(job.done) && job.done > 0 && job.done < 60_000, "each committed batch is in the store once")
    }
}
