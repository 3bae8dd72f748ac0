import Foundation
import GRDB
import Logging
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

@Suite("Retries: backoff, dead jobs, lost workers")
struct RetryTests {
    @Test("the retry delay doubles from the base, stays in the upper half of that (jitter), and stops at the cap")
    func backoff() {
        let policy = RetryPolicy(maxAttempts: 10, base: .seconds(1), cap: .seconds(30))
        var random = SystemRandomNumberGenerator()
        for attempt in 1...8 {
            let full = min(30, pow(2, Double(attempt - 1)))
            for _ in 0..<50 {
                let delay = policy.delay(afterAttempt: attempt, using: &random).seconds
                #expect(delay >= full / 2 && delay <= full, "attempt \(attempt): \(delay)")
            }
        }
        #expect(RetryPolicy(JobSpec(kind: "")) == .default)
    }

    func store(_ directory: TemporaryDirectory) throws -> RootStore {
        try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
    }

    func push(_ store: RootStore, maxAttempts: UInt32 = 3, baseMs: UInt32 = 60_000) async throws -> Int64 {
        try await store.jobs.pushJobs(
            [
                Tributary_V1_JobSpec.with {
                    $0.kind = "noop"
                    $0.maxAttempts = maxAttempts
                    $0.backoffBaseMs = baseMs
                }
            ], batch: "b"
        ).ids[0]
    }

    @Test("a failed attempt waits out its backoff, and the last attempt's failure makes the job dead, with history")
    func retryThenDead() async throws {
        let directory = try TemporaryDirectory()
        let store = try store(directory)
        let id = try await push(store, maxAttempts: 2)
        let first = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        let outcome = try await store.jobs.failJob(
            id: id, attempt: first.attempt, worker: "w1", message: "boom 1", permanent: false)
        guard case .retrying(let at) = outcome?.outcome else {
            Issue.record("expected a retry, got \(String(describing: outcome))")
            return
        }
        #expect(at.timeIntervalSinceNow > 25 && at.timeIntervalSinceNow <= 60)
        #expect(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]) == nil, "not before its retry time")

        // Make it due, run the last attempt, fail it.
        try await store.pool.write { try $0.execute(sql: "UPDATE tributary_jobs SET run_at = 0") }
        let second = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(second.attempt == 2)
        let last = try await store.jobs.failJob(id: id, attempt: 2, worker: "w1", message: "boom 2", permanent: false)
        #expect(last?.outcome == .dead)
        let (state, errors) = try await store.pool.read { db in
            let row = try #require(
                try Row.fetchOne(db, sql: "SELECT state, errors FROM tributary_jobs WHERE id = ?", arguments: [id]))
            return (row["state"] as String, row["errors"] as String)
        }
        #expect(state == "dead")
        let history = try JSONDecoder().decode([JobError].self, from: Data(errors.utf8))
        #expect(history.map(\.message) == ["boom 1", "boom 2"] && history.map(\.attempt) == [1, 2])
        #expect(try await store.jobs.batchStatus("b").deadJobs == 1)
        #expect(try await store.jobs.batchStatus("b").dead.first?.attempts == 2)
    }

    @Test("a permanent failure makes the job dead at once; a stale attempt's failure changes nothing")
    func permanentAndStale() async throws {
        let directory = try TemporaryDirectory()
        let store = try store(directory)
        let id = try await push(store, maxAttempts: 20)
        let job = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(
            try await store.jobs.failJob(id: id, attempt: job.attempt + 1, worker: "w1", message: "x", permanent: false)
                == nil)
        #expect(
            try await store.jobs.failJob(id: id, attempt: job.attempt, worker: "w2", message: "x", permanent: false)
                == nil)
        #expect(
            try await store.jobs.failJob(
                id: id, attempt: job.attempt, worker: "w1", message: "bad row", permanent: true)?
                .outcome == .dead)
    }

    @Test(
        "a lost worker's attempt counts, so a job that keeps losing its worker ends dead; handing back does not count")
    func lostWorkers() async throws {
        let directory = try TemporaryDirectory()
        let store = try store(directory)
        let id = try await push(store, maxAttempts: 2)
        _ = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(try await store.jobs.releaseJobs(of: "w1") == 1)
        let again = try #require(try await store.jobs.claimJob(for: "w2", kinds: ["noop"]))
        #expect(again.attempt == 2, "a new number for the next run")
        #expect(try await store.jobs.job(id: id)?.attemptsCounted == 1, "the hand-back did not count")
        #expect(try await store.jobs.requeueJobs(of: "w2") == 1, "first lost attempt: queued again at once")
        let last = try #require(try await store.jobs.claimJob(for: "w3", kinds: ["noop"]))
        #expect(last.id == id && last.attempt == 3)
        #expect(try await store.jobs.requeueJobs(of: "w3") == 0, "the last attempt lost: dead, not re-queued")
        #expect(try await store.jobs.batchStatus("b").deadJobs == 1)
    }

    @Test(
        "an attempt number is never given twice: a job handed back, or a dead job retried, is leased under a new one, and the old one's saves and failure are refused; neither costs an attempt"
    )
    func attemptNumbersNotReused() async throws {
        let directory = try TemporaryDirectory()
        let store = try store(directory)
        let id = try await push(store, maxAttempts: 2)
        func save(_ attempt: Int, completes: Bool = false) -> Tributary_V1_SaveChanges {
            var save = Tributary_V1_SaveChanges()
            save.jobID = UInt64(id)
            save.attempt = UInt32(attempt)
            save.completesJob = completes
            return save
        }
        // A graceful stop hands the job back while its run goes on; the same worker gets the job again.
        let first = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(try await store.jobs.releaseAllRunningJobs() == 1)
        let second = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(second.attempt == first.attempt + 1, "the handed-back run's number is not given again")
        await #expect(throws: LeaseError.self, "the old run's save") {
            try await store.saves.applySave(save(first.attempt, completes: true), from: "w1")
        }
        #expect(
            try await store.jobs.failJob(id: id, attempt: first.attempt, worker: "w1", message: "old", permanent: false)
                == nil, "the old run's failure")
        // A worker saying goodbye hands back too.
        #expect(try await store.jobs.releaseJobs(of: "w1") == 1)
        let third = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(third.attempt == second.attempt + 1)
        // Two hand-backs cost nothing: the job has both its attempts, the first failing and the second dying.
        let failed = try await store.jobs.failJob(
            id: id, attempt: third.attempt, worker: "w1", message: "boom", permanent: false)
        guard case .retrying = failed?.outcome else {
            Issue.record("the first counted failure of two allowed: \(String(describing: failed))")
            return
        }
        try await store.pool.write { try $0.execute(sql: "UPDATE tributary_jobs SET run_at = 0") }
        let fourth = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(fourth.attempt == 4)
        #expect(
            try await store.jobs.failJob(id: id, attempt: 4, worker: "w1", message: "boom", permanent: false)?.outcome
                == .dead)
        #expect(try await store.jobs.batchStatus("b").dead.first?.attempts == 2, "the attempts that counted")
        // A dead job retried gets a full set of attempts, numbered on.
        _ = try #require(try await store.jobs.retryJob(id: id))
        let retried = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(retried.attempt == 5, "numbered after every earlier run")
        await #expect(throws: LeaseError.self, "an earlier run's save") {
            try await store.saves.applySave(save(1, completes: true), from: "w1")
        }
        let again = try await store.jobs.failJob(
            id: id, attempt: retried.attempt, worker: "w1", message: "boom", permanent: false)
        guard case .retrying = again?.outcome else {
            Issue.record("a retried job's first failure: \(String(describing: again))")
            return
        }
        try await store.pool.write { try $0.execute(sql: "UPDATE tributary_jobs SET run_at = 0") }
        let last = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        _ = try await store.saves.applySave(save(last.attempt, completes: true), from: "w1")
        #expect(try await store.jobs.job(id: id)?.state == .done)
    }
}

/// A job that fails its first two attempts, then succeeds.
struct FlakyHandler: JobHandler {
    let kind = "flaky"

    func run(_ job: JobRun) async throws {
        struct Transient: Error, CustomStringConvertible {
            let attempt: UInt32
            var description: String { "transient failure on attempt \(attempt)" }
        }
        if job.attempt < 3 { throw Transient(attempt: job.attempt) }
        try await job.complete(job.makeContext(), progress: 1)
    }
}

@Suite("Integration: retries through a real coordinator", .serialized)
struct RetryIntegrationTests {
    @Test("a job that fails twice is retried after its backoff and done on its third attempt, with its error history")
    func flakyJobRetries() async throws {
        let directory = try TemporaryDirectory()
        let (status, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let worker = InProcessWorker.start(endpoint: coordinator.process.listenEndpoint, handlers: [FlakyHandler()])
            defer { worker.cancel() }
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let pushed = try await client.push([
                JobSpec(kind: "flaky", total: 1, backoffBase: .milliseconds(10), backoffCap: .milliseconds(20))
            ])
            let status = try await client.finish(pushed.batch, timeout: .seconds(30))
            await client.close()
            return status
        }
        #expect(exitStatus == 0)
        #expect(status.doneJobs == 1 && status.deadJobs == 0)
        try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            let row = try #require(try Row.fetchOne(db, sql: "SELECT state, attempt, errors FROM tributary_jobs"))
            #expect(row["state"] as String == "done")
            #expect(row["attempt"] as Int == 3)
            let history = try JSONDecoder().decode([JobError].self, from: Data((row["errors"] as String).utf8))
            #expect(history.map(\.message) == ["transient failure on attempt 1", "transient failure on attempt 2"])
        }
    }
}

@Suite("Store format and restarts")
struct StoreRestartTests {
    @Test("a coordinator restart counts the attempts it cannot vouch for: a job on its last attempt ends dead")
    func restartCountsAttempts() async throws {
        let directory = try TemporaryDirectory()
        var store: RootStore? = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let ids = try await store!.jobs.pushJobs(
            [
                Tributary_V1_JobSpec.with {
                    $0.kind = "noop"; $0.maxAttempts = 1
                },
                Tributary_V1_JobSpec.with {
                    $0.kind = "noop"; $0.maxAttempts = 5
                },
            ], batch: "b"
        ).ids
        _ = try await store!.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 2)
        try store!.close()
        store = nil
        let reopened = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let last = try #require(try await reopened.jobs.job(id: ids[0]))
        let other = try #require(try await reopened.jobs.job(id: ids[1]))
        #expect(last.state == .dead)
        #expect(other.state == .queued && other.errors.map(\.message) == ["attempt lost: the coordinator restarted"])
    }

    @Test("a store of another format is refused with a message, not misread")
    func otherFormatRefused() async throws {
        let directory = try TemporaryDirectory()
        try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model).close()
        let queue = try DatabaseQueue(path: directory.path("store.sqlite"))
        try await queue.write { try $0.execute(sql: "UPDATE tributary_meta SET value = 1 WHERE key = 'format'") }
        try queue.close()
        let error = try #require(throws: StoreError.self) {
            try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        }
        #expect(error.code == .incompatibleStore)
        #expect(error.message.contains("has store format 1"))
    }
}

@Suite("Scheduling: priorities, delays, unique keys")
struct SchedulingTests {
    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
    }

    func spec(priority: Int32 = 0, runAt: Double = 0, key: String = "") -> Tributary_V1_JobSpec {
        Tributary_V1_JobSpec.with {
            $0.kind = "noop"
            $0.priority = priority
            $0.runAt = runAt
            $0.uniqueKey = key
        }
    }

    @Test("higher priorities are claimed first; equal priorities oldest first")
    func priorityOrder() async throws {
        let ids = try await store.jobs.pushJobs(
            [spec(priority: 0), spec(priority: 5), spec(priority: -1), spec(priority: 5)], batch: "b"
        ).ids
        var order: [Int64] = []
        while let job = try await store.jobs.claimJob(for: "w1", kinds: ["noop"]) { order.append(job.id) }
        #expect(order == [ids[1], ids[3], ids[0], ids[2]])
    }

    @Test("a delayed job is not claimed before its time")
    func delayed() async throws {
        let later = Date().timeIntervalSince1970 + 3_600
        let ids = try await store.jobs.pushJobs([spec(runAt: later), spec()], batch: "b").ids
        let claimed = try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 10)
        #expect(claimed.map(\.id) == [ids[1]])
        try await store.pool.write { try $0.execute(sql: "UPDATE tributary_jobs SET run_at = 0") }
        #expect(try await store.jobs.claimJob(for: "w1", kinds: ["noop"])?.id == ids[0])
    }

    @Test("a job with a unique key is not enqueued twice while one with that key is queued or running")
    func uniqueKeys() async throws {
        let first = try await store.jobs.pushJobs([spec(key: "nightly"), spec(key: "nightly")], batch: "b")
        #expect(first.duplicates == [1])
        #expect(first.ids[0] == first.ids[1], "the duplicate names the job that holds the key")
        let job = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        let whileRunning = try await store.jobs.pushJobs([spec(key: "nightly")], batch: "b")
        #expect(whileRunning.duplicates == [0] && whileRunning.ids == [job.id])
        var save = Tributary_V1_SaveChanges()
        save.jobID = UInt64(job.id)
        save.attempt = UInt32(job.attempt)
        save.completesJob = true
        _ = try await store.saves.applySave(save, from: "w1")
        let afterDone = try await store.jobs.pushJobs([spec(key: "nightly")], batch: "b")
        #expect(afterDone.duplicates.isEmpty && afterDone.ids[0] != job.id)
        #expect(try await store.jobs.batchStatus("b").totalJobs == 2, "duplicates are not counted in the batch")
    }
}

@Suite("Cancellation")
struct CancellationTests {
    @Test(
        "a cancelled queued job is never claimed; a cancelled running job's saves are refused; finished jobs cannot be")
    func storeRules() async throws {
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let ids = try await store.jobs.pushJobs(
            [JobSpec(kind: "noop"), JobSpec(kind: "noop")],
            batch: "b"
        ).ids
        #expect(try await store.jobs.cancelJob(id: ids[0])?.before.state == .queued)
        let running = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(running.id == ids[1], "the cancelled job is passed over")
        #expect(try await store.jobs.cancelJob(id: ids[1])?.before.state == .running)
        var save = Tributary_V1_SaveChanges()
        save.jobID = UInt64(ids[1])
        save.attempt = UInt32(running.attempt)
        save.completesJob = true
        await #expect(throws: LeaseError.self) { try await store.saves.applySave(save, from: "w1") }
        let error = await #expect(throws: StoreError.self) { try await store.jobs.cancelJob(id: ids[1]) }
        #expect(error?.message.contains("job \(ids[1]) is cancelled") == true)
        let status = try await store.jobs.batchStatus("b")
        #expect(status.cancelledJobs == 2 && status.totalJobs == 2)
    }
}

/// Saves one new user every few milliseconds until something stops it, and records what did.
struct EndlessHandler: JobHandler {
    let kind = "endless"
    /// Set when the job was stopped by a cancellation (``JobCancelled``).
    let sawCancellation: Locked<Bool>
    /// Set when the job was stopped by anything.
    var stopped = Locked<String?>(nil)

    func run(_ job: JobRun) async throws {
        let context = job.makeContext()
        do {
            for index in 0..<100_000 {
                try await context.perform { context in
                    _ = try context.findOrCreate("User", matching: ["login": .string("endless-\(index)")])
                }
                try await job.save(context, progress: UInt64(index + 1))
                try await Task.sleep(for: .milliseconds(5))
            }
        } catch let error as JobCancelled {
            sawCancellation.withLock { $0 = true }
            stopped.withLock { $0 = "\(error)" }
            throw error
        } catch {
            stopped.withLock { $0 = "\(error)" }
            throw error
        }
    }
}

@Suite("Integration: cancelling a running job", .serialized)
struct CancellationIntegrationTests {
    @Test("a running job that is cancelled stops at its next batch and keeps the batches it committed")
    func cancelRunning() async throws {
        let directory = try TemporaryDirectory()
        let sawCancellation = Locked(false)
        let (job, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let worker = InProcessWorker.start(
                endpoint: coordinator.process.listenEndpoint,
                handlers: [EndlessHandler(sawCancellation: sawCancellation)])
            defer { worker.cancel() }
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let id = try await client.push([JobSpec(kind: "endless")]).ids[0]
            try await waitUntil("the job to commit a few batches") { try await client.job(id).done >= 3 }
            let running = try await client.status().running
            #expect(running.map(\.id) == [id] && running[0].done >= 3, "status shows the running job's progress")
            _ = try await client.cancel(id)
            try await waitUntil("the handler to see the cancellation") { sawCancellation.value }
            let job = try await client.job(id)
            await client.close()
            return job
        }
        #expect(exitStatus == 0)
        #expect(job.state == .cancelled)
        let users = try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User WHERE login LIKE 'endless-%'") ?? 0
        }
        #expect(users >= 3 && users == Int(job.done), "the committed batches stay, and no batch after the cancel")
    }
}

@Suite("Integration: graceful coordinator stop", .serialized)
struct GracefulStopTests {
    @Test("SIGTERM to the coordinator hands a running job back without counting its attempt")
    func gracefulStopReleases() async throws {
        let directory = try TemporaryDirectory()
        let sawCancellation = Locked(false)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--drain-seconds", "0.3"])
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [EndlessHandler(sawCancellation: sawCancellation)])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let id = try await client.push([JobSpec(kind: "endless")]).ids[0]
        try await waitUntil("the job to commit a batch") { try await client.job(id).done >= 1 }
        await client.close()
        #expect(await coordinator.process.stop() == 0)

        let store = try RootStore.open(path: coordinator.storePath, model: DemoData.model)
        let job = try #require(try await store.jobs.job(id: Int64(id)))
        #expect(job.state == .queued)
        #expect(job.attemptsCounted == 0 && job.errors.isEmpty, "a graceful stop costs the job no attempt")
        #expect(job.attempt == 1, "and its next run has a number of its own")
    }
}

@Suite("Retention")
struct RetentionTests {
    @Test("finished jobs older than the retention are pruned with their payloads; dead and recent ones stay")
    func prune() async throws {
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let spec = Tributary_V1_JobSpec.with {
            $0.kind = "noop"
            $0.payload = Data("x".utf8)
        }
        let ids = try await store.jobs.pushJobs([spec, spec, spec, spec], batch: "b").ids
        try await store.pool.write { db in
            try db.execute(
                sql: "UPDATE tributary_jobs SET state = 'done', updated_at = 1000 WHERE id = ?", arguments: [ids[0]])
            try db.execute(
                sql: "UPDATE tributary_jobs SET state = 'dead', updated_at = 1000 WHERE id = ?", arguments: [ids[1]])
            try db.execute(sql: "UPDATE tributary_jobs SET state = 'done' WHERE id = ?", arguments: [ids[2]])
        }
        #expect(try await store.jobs.pruneFinishedJobs(before: Date(timeIntervalSince1970: 2000)) == 1)
        #expect(try await store.jobs.job(id: ids[0]) == nil)
        #expect(try await store.jobs.job(id: ids[1])?.state == .dead)
        #expect(try await store.jobs.job(id: ids[2])?.state == .done)
        #expect(try await store.jobs.job(id: ids[3])?.state == .queued)
        let payloads = try await store.pool.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_payloads")
        }
        #expect(payloads == 3)
    }

    @Test("pruning goes in chunks of the limit, lowest ids first, skipping the jobs it keeps")
    func pruneInChunks() async throws {
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let ids = try await store.jobs.pushJobs(Array(repeating: JobSpec(kind: "noop"), count: 7), batch: "b").ids
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE tributary_jobs SET state = 'done', updated_at = 1000")
            // Kept whatever the cutoff: a dead job, and one finished after it.
            try db.execute(sql: "UPDATE tributary_jobs SET state = 'dead' WHERE id = ?", arguments: [ids[1]])
            try db.execute(sql: "UPDATE tributary_jobs SET updated_at = 3000 WHERE id = ?", arguments: [ids[3]])
        }
        let cutoff = Date(timeIntervalSince1970: 2000)
        #expect(try await store.jobs.pruneFinishedJobs(before: cutoff, limit: 2) == 2)
        #expect(try await store.jobs.job(id: ids[0]) == nil)
        #expect(try await store.jobs.job(id: ids[2]) == nil)
        #expect(try await store.jobs.job(id: ids[4]) != nil)
        #expect(try await store.jobs.pruneFinishedJobs(before: cutoff, limit: 2) == 2)
        #expect(try await store.jobs.pruneFinishedJobs(before: cutoff, limit: 2) == 1)
        #expect(try await store.jobs.pruneFinishedJobs(before: cutoff, limit: 2) == 0)
        let left = try await store.pool.read { try Int64.fetchAll($0, sql: "SELECT id FROM tributary_jobs") }
        #expect(left == [ids[1], ids[3]])
    }
}

@Suite("Integration: attempt timeouts", .serialized)
struct TimeoutIntegrationTests {
    @Test("an attempt that outlives its job's timeout fails (here: dead, one attempt) and its worker stops it")
    func timeout() async throws {
        let directory = try TemporaryDirectory()
        let stopped = Locked<String?>(nil)
        let (job, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let worker = InProcessWorker.start(
                endpoint: coordinator.process.listenEndpoint,
                handlers: [EndlessHandler(sawCancellation: Locked(false), stopped: stopped)])
            defer { worker.cancel() }
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let pushed = try await client.push([JobSpec(kind: "endless", maxAttempts: 1, timeout: .milliseconds(300))])
            _ = try await client.finish(pushed.batch, timeout: .seconds(30))
            // Stopped by the coordinator's CancelJob, or by a save already in flight being refused.
            try await waitUntil("the handler to stop") { stopped.value != nil }
            let job = try await client.job(pushed.ids[0])
            await client.close()
            return job
        }
        #expect(exitStatus == 0)
        #expect(job.state == .dead)
        #expect(job.errors.map(\.message) == ["attempt timed out after 0.3 s"])
    }
}

/// Sleeps a moment, then completes: a job that finishes within a drain's grace period.
struct BriefHandler: JobHandler {
    let kind = "brief"
    let started: Locked<Bool>

    func run(_ job: JobRun) async throws {
        started.withLock { $0 = true }
        try await Task.sleep(for: .milliseconds(500))
        try await job.complete(job.makeContext(), progress: 1)
    }
}

/// Saves one empty batch after another until it is stopped: a job that outlives any grace period.
struct SavingForeverHandler: JobHandler {
    let kind = "saving-forever"
    let saves: Locked<Int>

    func run(_ job: JobRun) async throws {
        var done: UInt64 = 0
        while true {
            done += 1
            _ = try await job.save(job.makeContext(), progress: done)
            saves.withLock { $0 += 1 }
        }
    }
}

@Suite("Integration: draining on a graceful stop", .serialized)
struct DrainTests {
    @Test(
        "jobs that keep saving past the grace period do not hold up a SIGTERM: the coordinator exits 0 and hands them back without counting an attempt"
    )
    func drainEndsWhileWorkersSave() async throws {
        let directory = try TemporaryDirectory()
        let saves = Locked(0)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--drain-seconds", "1"])
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [SavingForeverHandler(saves: saves)])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let ids = try await client.push(
            (0..<4).map { _ in JobSpec(kind: "saving-forever") }
        ).ids
        try await waitUntil("the jobs to save") { saves.value >= 100 }
        await client.close()
        let process = coordinator.process
        let status = try await withTimeout("the coordinator to stop while its workers go on saving", .seconds(30)) {
            await process.stop()
        }
        #expect(status == 0)
        let store = try RootStore.open(path: coordinator.storePath, model: DemoData.model)
        for id in ids {
            let job = try #require(try await store.jobs.job(id: Int64(id)))
            #expect(
                job.state == .queued && job.attemptsCounted == 0 && job.attempt == 1,
                "handed back for the next start, no attempt counted")
        }
    }

    @Test("SIGTERM to the coordinator lets a running job finish and commit within the grace period, then exits 0")
    func drainLetsJobsFinish() async throws {
        let directory = try TemporaryDirectory()
        let started = Locked(false)
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [BriefHandler(started: started)])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let id = try await client.push([JobSpec(kind: "brief", total: 1)]).ids[0]
        try await waitUntil("the job to start") { started.value }
        await client.close()
        #expect(await coordinator.process.stop() == 0)
        let store = try RootStore.open(path: coordinator.storePath, model: DemoData.model)
        let job = try #require(try await store.jobs.job(id: Int64(id)))
        #expect(job.state == .done, "the job finished during the drain")
    }
}
