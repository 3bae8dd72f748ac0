import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Dependencies in the store: a job with parents waits until each is done, and a failed parent settles it by its
/// policy, in the transaction that finishes the parent.
@Suite("Dependencies: the store")
struct DependencyStoreTests {
    let temporary: TemporaryStore
    var store: RootStore { temporary.store }

    init() throws {
        temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
    }

    static func job(
        _ kind: String = "noop", after: [Int64] = [], batches: [String] = [], pushed: [Int] = [],
        policy: ParentFailure = .fail
    ) -> JobSpec {
        var spec = JobSpec(kind: kind)
        spec.afterJobs = after
        spec.afterBatches = batches
        spec.afterPushed = pushed
        spec.onParentFailure = policy
        return spec
    }

    func state(_ id: Int64) async throws -> JobState? { try await store.jobs.job(id: id)?.state }

    /// Claims the job `id` (of kind `parent`) and completes it with one save.
    func complete(_ id: Int64, kind: String = "parent") async throws {
        let claimed = try await store.jobs.claimJobs(for: "w", kinds: [kind], limit: 100)
        let job = try #require(claimed.first { $0.id == id })
        _ = try await store.saves.applySave(
            .with {
                $0.jobID = UInt64(id)
                $0.attempt = UInt32(job.attempt)
                $0.completesJob = true
            }, from: "w")
        // The others claimed with it go back without counting an attempt.
        try await store.jobs.releaseJobs(of: "w")
    }

    @Test(
        "a child waits for two parents, is not claimed before both are done, and is queued by the second's completion")
    func waitsForBoth() async throws {
        let parents = try await store.jobs.pushJobs([JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p").ids
        let child = try await store.jobs.pushJobs([Self.job(after: parents)], batch: "c").ids[0]
        #expect(try await state(child) == .waiting)
        #expect(try await store.jobs.claimJobs(for: "w2", kinds: ["noop"], limit: 10).isEmpty)
        try await complete(parents[0])
        #expect(try await state(child) == .waiting)
        #expect(try await store.jobs.parentsReason(of: child) == "waits for job \(parents[1]) (queued)")
        try await complete(parents[1])
        #expect(try await state(child) == .queued)
        #expect(try await store.jobs.claimJobs(for: "w2", kinds: ["noop"], limit: 10).map(\.id) == [child])
        let info = try #require(try await store.jobs.job(id: child))
        #expect(info.afterJobs == parents && info.onParentFailure == .fail)
    }

    @Test(
        "a dead parent kills its child and grandchild (naming it); cancel and run policies; batch callbacks count them")
    func failedParents() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        var callback = JobSpec(kind: "noop")
        callback.arguments = ["x": "y"]
        let children = try await store.jobs.pushJobs(
            [
                Self.job(after: [parent]), Self.job(pushed: [0]), Self.job(after: [parent], policy: .cancel),
                Self.job(after: [parent], policy: .run),
            ], batch: "c", onComplete: callback
        ).ids
        #expect(try await store.jobs.overview().counts[.waiting] == 4)
        let claimed = try #require(try await store.jobs.claimJobs(for: "w", kinds: ["parent"], limit: 1).first)
        _ = try await store.jobs.failJob(
            id: parent, attempt: claimed.attempt, worker: "w", message: "boom", permanent: true)
        #expect(try await state(children[0]) == .dead)
        #expect(
            try await store.jobs.job(id: children[0])?.errors.last?.message
                == "job \(parent), which it waits for, is dead")
        #expect(try await state(children[1]) == .dead, "the grandchild dies with its parent")
        #expect(try await state(children[2]) == .cancelled)
        #expect(try await state(children[3]) == .queued)
        let batch = try await store.jobs.batchStatus("c")
        #expect(batch.deadJobs == 2 && batch.cancelledJobs == 1)
        // The run-policy child finishes the batch: its callback is pushed once, with the counts.
        let run = try #require(try await store.jobs.claimJobs(for: "w", kinds: ["noop"], limit: 10).first)
        _ = try await store.saves.applySave(
            .with {
                $0.jobID = UInt64(run.id)
                $0.attempt = UInt32(run.attempt)
                $0.completesJob = true
            }, from: "w")
        let callbacks = try await store.jobs.list(state: nil, batch: "c/complete", limit: 10, before: nil)
        #expect(callbacks.count == 1)
        #expect(callbacks.first?.arguments["dead_jobs"] == "2" && callbacks.first?.arguments["cancelled_jobs"] == "1")
    }

    @Test("a batch parent: the child waits for every job of it; one dead job fails the child")
    func batchParents() async throws {
        let parents = try await store.jobs.pushJobs([JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p").ids
        let child = try await store.jobs.pushJobs([Self.job(batches: ["p"])], batch: "c").ids[0]
        try await complete(parents[0])
        #expect(try await state(child) == .waiting)
        #expect(try await store.jobs.parentsReason(of: child) == "waits for batch p (1 of 2 jobs done)")
        try await complete(parents[1])
        #expect(try await state(child) == .queued)

        let doomed = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "q").ids[0]
        let orphan = try await store.jobs.pushJobs([Self.job(batches: ["q"])], batch: "c2").ids[0]
        _ = try await store.jobs.cancelJob(id: doomed)
        #expect(try await state(orphan) == .dead)
        #expect(
            try await store.jobs.job(id: orphan)?.errors.last?.message
                == "batch 'q', which it waits for, has 0 dead and 1 cancelled jobs")
    }

    @Test("parents already done count at once; unknown parents, later jobs of the push and the own batch are refused")
    func pushTime() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        try await complete(parent)
        let child = try await store.jobs.pushJobs([Self.job(after: [parent])], batch: "c").ids[0]
        #expect(try await state(child) == .queued)
        let before = try await store.jobs.overview().counts
        for (spec, message) in [
            (Self.job(after: [999]), "job 0 of the push waits for job 999, which does not exist"),
            (Self.job(batches: ["nope"]), "job 0 of the push waits for batch 'nope', which does not exist"),
            (Self.job(batches: ["c"]), "job 0 of the push waits for its own batch 'c', which it is part of"),
            (Self.job(pushed: [0]), "after_pushed names earlier jobs only"),
        ] {
            let error = await #expect(throws: StoreError.self) { try await store.jobs.pushJobs([spec], batch: "c") }
            #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        }
        #expect(try await store.jobs.overview().counts == before, "a refused push changes nothing")
    }

    @Test("a waiting job can be cancelled; a retried dead child waits again and runs once its parent is done")
    func cancelAndRetry() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let children = try await store.jobs.pushJobs(
            [Self.job(after: [parent]), Self.job(after: [parent])], batch: "c"
        ).ids
        _ = try await store.jobs.cancelJob(id: children[0])
        #expect(try await state(children[0]) == .cancelled)
        let claimed = try #require(try await store.jobs.claimJobs(for: "w", kinds: ["parent"], limit: 1).first)
        _ = try await store.jobs.failJob(
            id: parent, attempt: claimed.attempt, worker: "w", message: "boom", permanent: true)
        #expect(try await state(children[1]) == .dead)
        _ = try await store.jobs.retryJob(id: parent)
        _ = try await store.jobs.retryJob(id: children[1])
        #expect(try await state(children[1]) == .waiting)
        try await complete(parent)
        #expect(try await state(children[1]) == .queued)
        #expect(try await store.jobs.batchStatus("c").deadJobs == 0)
    }

    @Test("a waiting job holds its unique key")
    func uniqueKeyWhileWaiting() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        var spec = Self.job(after: [parent])
        spec.uniqueKey = "k"
        let first = try await store.jobs.pushJobs([spec], batch: "c")
        let second = try await store.jobs.pushJobs([spec], batch: "c")
        #expect(second.ids == first.ids && second.duplicates == [0])
    }
}

/// Dependencies with real processes: parents imported on two workers, a child that runs only after both commit,
/// and a dead parent that fails its child.
@Suite("Dependencies: real coordinator and workers", .serialized)
struct DependencyIntegrationTests {
    @Test(
        "a child waits for two parents run on different workers and is leased after both committed; a dead parent fails its child"
    )
    func childAfterParents() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = coordinator.process.listenEndpoint
        let client = try JobClient(endpoint: endpoint)
        defer { Task { await client.close() } }
        // Two workers taking one job at a time: the two parents go to different workers.
        let workers = try (0..<2).map { _ in
            try StartedProcess.start(
                "tributary-worker", ["--connect", endpoint, "--concurrency", "1", "--log-level", "error"])
        }
        defer { workers.forEach { $0.kill() } }
        try await waitUntil("both workers to register") { try await client.status().workers.count == 2 }

        func importSpec(_ from: Int, _ count: Int) -> JobSpec {
            let rows = (from..<from + count).map { #"{"login": "user\#($0)", "name": "User \#($0)"}"# }
            var spec = ImportJob.spec(
                entity: "User", payload: Data((rows.joined(separator: "\n") + "\n").utf8), rows: count)
            spec.arguments["batch_size"] = "500"
            return spec
        }
        let child = JobSpec(kind: "noop").with { $0.afterPushed = [0, 1] }
        let pushed = try await client.push([importSpec(0, 5_000), importSpec(5_000, 5_000), child])
        let (parentIDs, childID) = (Array(pushed.ids[0..<2]), pushed.ids[2])
        try await waitUntil("the child to be done", timeout: .seconds(60)) {
            try await client.job(childID).state == .done
        }
        try await DatabaseQueue(path: coordinator.storePath).read { db in
            let committed = try Row.fetchAll(
                db,
                sql: """
                    SELECT job_id, MAX(committed_at) AS last, COUNT(DISTINCT worker) AS workers, MIN(worker) AS worker
                    FROM tributary_history WHERE job_id IN (?, ?) GROUP BY job_id
                    """, arguments: [parentIDs[0], parentIDs[1]])
            #expect(committed.count == 2, "both parents committed rows")
            #expect(Set(committed.map { $0["worker"] as String }).count == 2, "the parents ran on different workers")
            let lastCommit = committed.map { $0["last"] as Double }.max() ?? .infinity
            let parentsDone =
                try Double.fetchOne(
                    db, sql: "SELECT MAX(updated_at) FROM tributary_jobs WHERE id IN (?, ?)",
                    arguments: [parentIDs[0], parentIDs[1]]) ?? .infinity
            let childLease =
                try Double.fetchOne(
                    db, sql: "SELECT leased_at FROM tributary_jobs WHERE id = ?", arguments: [childID]) ?? 0
            #expect(
                childLease >= lastCommit && childLease >= parentsDone,
                "the child was leased before its parents committed")
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User") == 10_000)
            #expect(
                try Int.fetchOne(db, sql: "SELECT attempt FROM tributary_jobs WHERE id = ?", arguments: [childID]) == 1)
        }

        // A parent that dies of a bad row fails its child, which never runs.
        var bad = importSpec(20_000, 10)
        bad.payload = Data(#"{"login": 42}"#.utf8 + [0x0A])
        bad.total = 1
        let orphan = JobSpec(kind: "noop").with { $0.afterPushed = [0] }
        let doomed = try await client.push([bad, orphan])
        try await waitUntil("the child to die with its parent") {
            try await client.job(doomed.ids[1]).state == .dead
        }
        let dead = try await client.job(doomed.ids[1])
        #expect(dead.attempt == 0, "the child never ran")
        #expect(dead.errors.last?.message == "job \(doomed.ids[0]), which it waits for, is dead")
        #expect(dead.afterJobs == [doomed.ids[0]])
    }

    @Test("the CLI pushes a job after another (--after, --on-parent-failure); `jobs show` says what it waits for")
    func cli() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let listen = ["--listen", coordinator.process.listenEndpoint]
        let parent = try await Binaries.run("tributary", ["push", "job", "--kind", "nobody"] + listen)
        #expect(parent.status == 0, "\(parent.error)")
        let parentID = parent.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let child = try await Binaries.run(
            "tributary",
            ["push", "job", "--kind", "noop", "--after", parentID, "--on-parent-failure", "cancel"] + listen)
        #expect(child.status == 0, "\(child.error)")
        let childID = child.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let shown = try await Binaries.run("tributary", ["jobs", "show", childID] + listen)
        #expect(shown.output.contains("state     waiting"), "\(shown.output)")
        #expect(shown.output.contains("waiting   waits for job \(parentID) (queued)"), "\(shown.output)")
        #expect(shown.output.contains("after     job \(parentID)  (on parent failure: cancel)"), "\(shown.output)")
        let status = try await Binaries.run("tributary", ["status"] + listen)
        #expect(status.output.contains("waiting 1  queued 1"), "\(status.output)")
        let cancel = try await Binaries.run("tributary", ["jobs", "cancel", parentID] + listen)
        #expect(cancel.status == 0, "\(cancel.error)")
        let after = try await Binaries.run("tributary", ["jobs", "show", childID] + listen)
        #expect(after.output.contains("state     cancelled"), "\(after.output)")
        for (arguments, message) in [
            (["--after", "1", "--on-parent-failure", "maybe"], "--on-parent-failure must be one of fail, cancel, run"),
            (["--on-parent-failure", "run"], "--on-parent-failure needs --after or --after-batch"),
            (["--after", "999"], "job 0 of the push waits for job 999, which does not exist"),
        ] {
            let refused = try await Binaries.run("tributary", ["push", "job", "--kind", "noop"] + arguments + listen)
            #expect(refused.status != 0 && refused.error.contains(message), "\(refused.error)")
        }
    }
}
