import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// The scenarios a review for lost or doubled work walks through, each played against the store: a crash in the
/// middle of a transaction that finishes jobs (injected with a trigger that aborts it), a group commit retried with
/// savepoints, retries, cancellations, deletions and pruning around dependencies, duplicate and in-push parents,
/// batches that grow, schedules replaced, deleted and re-added, limits that meet, and batch callbacks. After each,
/// every batch's counters are checked against its jobs and each finished batch's callback against the jobs it
/// pushed.
@Suite("Review scenarios: nothing lost, nothing doubled")
struct ReviewScenarioTests {
    let temporary: TemporaryStore
    var store: RootStore { temporary.store }

    init() throws {
        temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
    }

    // MARK: - Helpers

    static let callback = JobSpec(kind: "callback")

    func state(_ id: Int64) async throws -> JobState? { try await store.jobs.job(id: id)?.state }

    /// Leases job `id` (of `kind`) to worker `w`, handing the others claimed with it back as a claim never sent is
    /// (unleased, the attempt their claim numbered not counted).
    func lease(_ id: Int64, kind: String = "parent") async throws -> ClaimedJob {
        let claimed = try await store.jobs.claimJobs(for: "w", kinds: [kind], limit: 1_000)
        let others = claimed.filter { $0.id != id }.map(\.id)
        try await store.pool.write { db in
            for other in others {
                try db.execute(
                    sql:
                        "UPDATE tributary_jobs SET state = 'queued', worker = NULL, uncounted = uncounted + 1 WHERE id = ?",
                    arguments: [other])
            }
        }
        return try #require(claimed.first { $0.id == id }, "job \(id) was not claimable")
    }

    /// A save that completes a leased job, with `changes`.
    static func completion(_ job: ClaimedJob, _ changes: [Tributary_V1_EntityBatch] = []) -> Tributary_V1_SaveChanges {
        .with {
            $0.jobID = UInt64(job.id)
            $0.attempt = UInt32(job.attempt)
            $0.completesJob = true
            $0.changes.batches = changes
        }
    }

    func complete(_ id: Int64, kind: String = "parent") async throws {
        _ = try await store.saves.applySave(Self.completion(try await lease(id, kind: kind)), from: "w")
    }

    func kill(_ id: Int64, kind: String = "parent") async throws {
        let job = try await lease(id, kind: kind)
        _ = try await store.jobs.failJob(id: id, attempt: job.attempt, worker: "w", message: "boom", permanent: true)
    }

    /// Makes the next write that does `event` on `table` (matching `when`) fail, as a crash there would end it:
    /// the transaction is rolled back.
    func crash(on event: String, of table: String, when condition: String = "1") async throws {
        try await store.pool.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER review_crash \(event) ON \(table) WHEN \(condition)
                    BEGIN SELECT RAISE(ABORT, 'crashed here'); END
                    """)
        }
    }

    func recover() async throws {
        try await store.pool.write { try $0.execute(sql: "DROP TRIGGER review_crash") }
    }

    /// What must hold whatever happened: each batch's counters equal its jobs' states, and a finished batch with a
    /// callback pushed it exactly once (an unfinished one not at all).
    func checkInvariants(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        struct Batch: Sendable {
            var name: String
            /// Total, done, dead and cancelled jobs: as counted, and as the jobs stand.
            var counted: [Int]
            var actual: [Int]
            var hasCallback: Bool
            var callbackRecorded: Bool
            var callbacks: Int
        }
        let batches = try await store.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT b.batch, b.total_jobs, b.done_jobs, b.dead_jobs, b.cancelled_jobs,
                        b.on_complete IS NOT NULL, b.completed_job IS NOT NULL,
                        (SELECT COUNT(*) FROM tributary_jobs j WHERE j.batch = b.batch),
                        (SELECT COUNT(*) FROM tributary_jobs j WHERE j.batch = b.batch AND state = 'done'),
                        (SELECT COUNT(*) FROM tributary_jobs j WHERE j.batch = b.batch AND state = 'dead'),
                        (SELECT COUNT(*) FROM tributary_jobs j WHERE j.batch = b.batch AND state = 'cancelled'),
                        (SELECT COUNT(*) FROM tributary_jobs j WHERE j.batch = b.batch || '/complete')
                    FROM tributary_batches b
                    """
            ).map { row in
                Batch(
                    name: row[0], counted: (1...4).map { row[$0] }, actual: (7...10).map { row[$0] },
                    hasCallback: row[5], callbackRecorded: row[6], callbacks: row[11])
            }
        }
        for batch in batches {
            #expect(
                batch.counted == batch.actual, "batch \(batch.name): counters \(batch.counted), jobs \(batch.actual)",
                sourceLocation: sourceLocation)
            guard batch.hasCallback else { continue }
            let finished = batch.actual[1] + batch.actual[2] + batch.actual[3] >= batch.actual[0]
            #expect(
                batch.callbacks == (finished ? 1 : 0) && batch.callbackRecorded == finished,
                "batch \(batch.name): \(batch.callbacks) callbacks, finished: \(finished)",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - A crash in the middle of a transaction

    @Test("a crash while a completion queues its child undoes the completion too; done again, the child queues once")
    func crashWhileSettlingChild() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p", onComplete: Self.callback)
            .ids[0]
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(after: [parent])], batch: "c").ids[0]
        let leased = try await lease(parent)
        try await crash(on: "AFTER UPDATE OF state", of: "tributary_jobs", when: "NEW.id = \(child)")
        let save = Self.completion(leased, [.inserting("User", "login", "parent-row")])
        await #expect(throws: (any Error).self) { try await store.saves.applySave(save, from: "w") }
        #expect(try await state(parent) == .running, "the parent's completion was undone with its child's queueing")
        #expect(try await state(child) == .waiting)
        #expect(try await store.jobs.batchStatus("p").doneJobs == 0)
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).isEmpty)
        #expect(try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") } == 0)
        try await checkInvariants()

        try await recover()
        _ = try await store.saves.applySave(save, from: "w")
        #expect(try await state(parent) == .done)
        #expect(try await state(child) == .queued)
        #expect(try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") } == 1)
        // The save again (a worker's resend after a lost ack): nothing more.
        _ = try await store.saves.applySave(save, from: "w")
        #expect(try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") } == 1)
        #expect(try await store.jobs.batchStatus("p").doneJobs == 1)
        try await checkInvariants()
    }

    @Test("a crash while a dead parent cascades to its grandchild leaves parent, child and grandchild as they were")
    func crashWhileCascading() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let family = try await store.jobs.pushJobs(
            [DependencyStoreTests.job(after: [parent]), DependencyStoreTests.job(pushed: [0])], batch: "c"
        ).ids
        let leased = try await lease(parent)
        try await crash(on: "AFTER UPDATE OF state", of: "tributary_jobs", when: "NEW.id = \(family[1])")
        await #expect(throws: (any Error).self) {
            try await store.jobs.failJob(
                id: parent, attempt: leased.attempt, worker: "w", message: "boom", permanent: true)
        }
        #expect(try await state(parent) == .running)
        #expect(try await state(family[0]) == .waiting)
        #expect(try await state(family[1]) == .waiting)
        try await checkInvariants()
        try await recover()
        _ = try await store.jobs.failJob(
            id: parent, attempt: leased.attempt, worker: "w", message: "boom", permanent: true)
        #expect(try await state(family[0]) == .dead)
        #expect(try await state(family[1]) == .dead)
        #expect(try await store.jobs.batchStatus("c").deadJobs == 2)
        try await checkInvariants()
    }

    @Test("a crash while a tick's job is inserted leaves the schedule at that tick; the next firing enqueues it once")
    func crashWhileFiring() async throws {
        let added = try await store.jobs.putSchedule(
            ScheduleSpec(name: "s", cron: "@every 1s", missed: .all, job: JobSpec(kind: "noop")), replace: false)
        try await crash(on: "BEFORE INSERT", of: "tributary_jobs", when: "NEW.schedule = 's'")
        await #expect(throws: (any Error).self) {
            try await store.jobs.fireDueSchedules(now: added.nextTick + 2.5, catchingUp: false)
        }
        let after = try #require(try await store.jobs.schedules().first)
        #expect(
            after.nextTick == added.nextTick && after.fired == 0, "the schedule moved past ticks it did not enqueue")
        try await recover()
        let fired = try await store.jobs.fireDueSchedules(now: added.nextTick + 2.5, catchingUp: false)
        #expect(fired.jobs.count == 3)
        _ = try await store.jobs.fireDueSchedules(now: added.nextTick + 2.5, catchingUp: false)
        let ticks = try await store.pool.read {
            try Double.fetchAll($0, sql: "SELECT tick FROM tributary_jobs WHERE schedule = 's' ORDER BY tick")
        }
        #expect(ticks == [0, 1, 2].map { added.nextTick + $0 })
        try await checkInvariants()
    }

    @Test("a crash while a batch's callback is pushed fails the whole group commit; applied again, it is pushed once")
    func crashWhilePushingCallback() async throws {
        let jobs = try await store.jobs.pushJobs(
            [JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p", onComplete: Self.callback
        ).ids
        let claimed = try await store.jobs.claimJobs(for: "w", kinds: ["parent"], limit: 2)
        #expect(claimed.map(\.id) == jobs)
        try await crash(on: "BEFORE INSERT", of: "tributary_jobs", when: "NEW.batch = 'p/complete'")
        let saves = claimed.map { (Self.completion($0, [.inserting("User", "login", "row-\($0.id)")]), "w") }
        let failed = try? await store.saves.applySaves(saves)
        #expect(failed == nil || failed?.allSatisfy { (try? $0.get()) == nil } == true)
        #expect(try await store.jobs.batchStatus("p").doneJobs == 0)
        #expect(try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") } == 0)
        try await recover()
        let results = try await store.saves.applySaves(saves)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        _ = try await store.saves.applySaves(saves)
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).count == 1)
        #expect(try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") } == 2)
        try await checkInvariants()
    }

    // MARK: - Group commits retried with savepoints

    @Test(
        "a group whose later save fails is applied again save by save: the completed parent queues its child once, its callback once"
    )
    func groupRetriedIsolated() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p", onComplete: Self.callback)
            .ids[0]
        let other = try await store.jobs.pushJobs([JobSpec(kind: "other")], batch: "o").ids[0]
        let child = try await store.jobs.pushJobs(
            [DependencyStoreTests.job(after: [parent]), DependencyStoreTests.job(batches: ["p"])], batch: "c"
        ).ids
        let parentJob = try await lease(parent)
        let otherJob = try await lease(other, kind: "other")
        // The second save names an entity the model lacks: applied without savepoints first, the group fails on it
        // after the first save's completion settled the children, and is applied again.
        let results = try await store.saves.applySaves([
            (Self.completion(parentJob, [.inserting("User", "login", "kept")]), "w"),
            (Self.completion(otherJob, [.inserting("User", "login", "undone"), .inserting("Nope", "x", "y")]), "w"),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false])
        #expect(try await state(parent) == .done)
        #expect(try await state(other) == .running)
        #expect(try await state(child[0]) == .queued)
        #expect(try await state(child[1]) == .queued)
        #expect(try await store.jobs.batchStatus("p").doneJobs == 1)
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).count == 1)
        let logins = try await store.pool.read { try String.fetchAll($0, sql: "SELECT login FROM User") }
        #expect(logins == ["kept"])
        let seqs = try await store.pool.read { try Int.fetchAll($0, sql: "SELECT seq FROM tributary_history") }
        #expect(seqs == [1], "one history record: the failed pass's sequence number was not kept")
        try await checkInvariants()
    }

    @Test("two saves completing a batch's last two jobs in one group push its callback once and queue its child once")
    func groupFinishesBatchTwice() async throws {
        let jobs = try await store.jobs.pushJobs(
            [JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p", onComplete: Self.callback
        ).ids
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(batches: ["p"])], batch: "c").ids[0]
        let claimed = try await store.jobs.claimJobs(for: "w", kinds: ["parent"], limit: 2)
        #expect(claimed.map(\.id) == jobs)
        let results = try await store.saves.applySaves(claimed.map { (Self.completion($0), "w") })
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).count == 1)
        #expect(try await state(child) == .queued)
        try await checkInvariants()
    }

    // MARK: - Retries

    @Test("a dead child retried while its parent is still dead dies again at once; the counters stay true")
    func retryChildOfDeadParent() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let child = try await store.jobs.pushJobs(
            [DependencyStoreTests.job(after: [parent])], batch: "c", onComplete: Self.callback
        ).ids[
            0]
        try await kill(parent)
        #expect(try await state(child) == .dead)
        let retried = try #require(try await store.jobs.retryJob(id: child))
        #expect(retried.job.state == .dead, "the child ran although its parent is dead")
        #expect(try await store.jobs.job(id: child)?.errors.count == 2)
        #expect(try await store.jobs.batchStatus("c").deadJobs == 1)
        #expect(
            try await store.jobs.list(state: nil, batch: "c/complete", limit: 10, before: nil).count == 1,
            "the callback is not pushed again when the batch finishes again")
        try await checkInvariants()
    }

    @Test("a parent retried after its run-policy child ran does not run the child again")
    func retryParentAfterChildRan() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(after: [parent], policy: .run)], batch: "c")
            .ids[
                0]
        try await kill(parent)
        #expect(try await state(child) == .queued)
        try await complete(child, kind: "noop")
        _ = try await store.jobs.retryJob(id: parent)
        try await complete(parent)
        #expect(try await state(child) == .done)
        #expect(try await store.jobs.job(id: child)?.attempt == 1)
        #expect(try await store.jobs.claimJobs(for: "w", kinds: ["noop"], limit: 10).isEmpty)
        try await checkInvariants()
    }

    @Test("a dead parent retried and done leaves its dead child dead until the child is retried, then runs it once")
    func retryParentThenChild() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(after: [parent])], batch: "c").ids[0]
        try await kill(parent)
        _ = try await store.jobs.retryJob(id: parent)
        #expect(try await state(child) == .dead)
        try await complete(parent)
        #expect(try await state(child) == .dead)
        let retried = try #require(try await store.jobs.retryJob(id: child))
        #expect(retried.job.state == .queued)
        try await complete(child, kind: "noop")
        #expect(try await store.jobs.batchStatus("c").doneJobs == 1)
        #expect(try await store.jobs.batchStatus("c").deadJobs == 0)
        try await checkInvariants()
    }

    // MARK: - Cancelling, deleting and pruning

    @Test("a cancelled waiting child is not queued by its parent's completion; its own child dies naming it")
    func cancelWaitingChild() async throws {
        let parent = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        let family = try await store.jobs.pushJobs(
            [
                DependencyStoreTests.job(after: [parent]), DependencyStoreTests.job(pushed: [0]),
                DependencyStoreTests.job(pushed: [0], policy: .run),
            ], batch: "c",
            onComplete: Self.callback
        ).ids
        _ = try await store.jobs.cancelJob(id: family[0])
        #expect(try await state(family[1]) == .dead)
        #expect(
            try await store.jobs.job(id: family[1])?.errors.last?.message
                == "job \(family[0]), which it waits for, was cancelled")
        #expect(try await state(family[2]) == .queued, "the run policy runs after a cancelled parent")
        try await complete(parent)
        #expect(try await state(family[0]) == .cancelled)
        #expect(try await store.jobs.claimJobs(for: "w", kinds: ["noop"], limit: 10).map(\.id) == [family[2]])
        await #expect(throws: StoreError.self) { try await store.jobs.cancelJob(id: family[0]) }
        try await checkInvariants()
    }

    @Test("a deleted or pruned parent counts as done: its waiting sibling's child still waits for the rest")
    func deleteAndPruneParents() async throws {
        let parents = try await store.jobs.pushJobs(
            [JobSpec(kind: "parent"), JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p"
        ).ids
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(after: parents, policy: .run)], batch: "c")
            .ids[
                0]
        _ = try await store.jobs.cancelJob(id: parents[0])
        try await complete(parents[1])
        #expect(try await state(child) == .waiting)
        _ = try await store.jobs.deleteJob(id: parents[0])
        #expect(try await store.jobs.pruneFinishedJobs(before: Date().addingTimeInterval(60)) == 1)
        #expect(try await state(child) == .waiting, "deleting finished parents released the child early")
        #expect(try await store.jobs.parentsReason(of: child) == "waits for job \(parents[2]) (queued)")
        try await complete(parents[2])
        #expect(try await state(child) == .queued)
        // A parent pruned is gone: a new child naming it is refused, nothing enqueued.
        let before = try await store.jobs.overview().counts
        await #expect(throws: StoreError.self) {
            try await store.jobs.pushJobs([DependencyStoreTests.job(after: [parents[1]])], batch: "c")
        }
        #expect(try await store.jobs.overview().counts == before)
        #expect(
            try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_job_parents") } == 1)
    }

    @Test("queued, running and waiting parents cannot be deleted: their children keep them")
    func unfinishedParentsStay() async throws {
        let parents = try await store.jobs.pushJobs([JobSpec(kind: "parent"), JobSpec(kind: "parent")], batch: "p").ids
        let child = try await store.jobs.pushJobs(
            [DependencyStoreTests.job(after: parents), DependencyStoreTests.job(pushed: [0])], batch: "c"
        ).ids
        _ = try await lease(parents[1])
        for id in [parents[0], parents[1], child[0]] {
            await #expect(throws: StoreError.self) { try await store.jobs.deleteJob(id: id) }
        }
        #expect(try await store.jobs.pruneFinishedJobs(before: Date().addingTimeInterval(60)) == 0)
        #expect(
            try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_job_parents") } == 3)
    }

    // MARK: - Parents named in the push

    @Test("a parent that is a duplicate by unique key is the existing job: the child waits for it")
    func duplicateParent() async throws {
        var unique = JobSpec(kind: "parent")
        unique.uniqueKey = "nightly"
        let existing = try await store.jobs.pushJobs([unique], batch: "p").ids[0]
        let pushed = try await store.jobs.pushJobs([unique, DependencyStoreTests.job(pushed: [0])], batch: "c")
        #expect(pushed.duplicates == [0] && pushed.ids[0] == existing)
        #expect(try await store.jobs.job(id: pushed.ids[1])?.afterJobs == [existing])
        #expect(try await store.jobs.batchStatus("c").totalJobs == 1, "the duplicate is not counted in the new batch")
        try await complete(existing)
        #expect(try await state(pushed.ids[1]) == .queued)
        try await checkInvariants()
    }

    @Test("after_pushed: a chain in one push, a parent named twice, a refused position leave nothing behind")
    func afterPushed() async throws {
        let pushed = try await store.jobs.pushJobs(
            [
                JobSpec(kind: "parent"), DependencyStoreTests.job(pushed: [0, 0]),
                DependencyStoreTests.job("parent", pushed: [1]),
            ], batch: "c"
        ).ids
        #expect(try await store.jobs.job(id: pushed[1])?.afterJobs == [pushed[0]])
        try await complete(pushed[0])
        #expect(try await state(pushed[1]) == .queued)
        #expect(try await state(pushed[2]) == .waiting)
        try await complete(pushed[1], kind: "noop")
        #expect(try await state(pushed[2]) == .queued)
        let before = try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_jobs") }
        let parents = try await store.pool.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_job_parents")
        }
        for position in [-1, 1, 2] {
            await #expect(throws: StoreError.self) {
                try await store.jobs.pushJobs(
                    [JobSpec(kind: "parent"), DependencyStoreTests.job(pushed: [position])], batch: "d")
            }
        }
        #expect(
            try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_jobs") } == before)
        #expect(
            try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM tributary_job_parents") }
                == parents)
        #expect(try await store.jobs.batchStatus("d").totalJobs == 0)
        try await checkInvariants()
    }

    // MARK: - Batches that grow

    @Test("a batch parent that gains a job while its child waits: the child waits for that job too")
    func batchGainsJobs() async throws {
        let first = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p", onComplete: Self.callback).ids[
            0]
        let child = try await store.jobs.pushJobs([DependencyStoreTests.job(batches: ["p"])], batch: "c").ids[0]
        let second = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        try await complete(first)
        #expect(try await state(child) == .waiting)
        #expect(try await store.jobs.parentsReason(of: child) == "waits for batch p (1 of 2 jobs done)")
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).isEmpty)
        try await complete(second)
        #expect(try await state(child) == .queued)
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).count == 1)
        // A job added after the batch finished runs on its own: the callback was pushed, the child queued; neither
        // happens again.
        let third = try await store.jobs.pushJobs([JobSpec(kind: "parent")], batch: "p").ids[0]
        try await complete(third)
        #expect(try await store.jobs.list(state: nil, batch: "p/complete", limit: 10, before: nil).count == 1)
        #expect(try await store.jobs.claimJobs(for: "w", kinds: ["noop"], limit: 10).map(\.id) == [child])
    }

    // MARK: - Schedules

    @Test("a schedule deleted and re-added under its name does not enqueue a tick its predecessor enqueued")
    func scheduleReAdded() async throws {
        let spec = ScheduleSpec(name: "s", cron: "@every 1s", missed: .all, job: JobSpec(kind: "noop"))
        let added = try await store.jobs.putSchedule(spec, replace: false)
        _ = try await store.jobs.fireDueSchedules(now: added.nextTick + 1.5, catchingUp: false)
        _ = try await store.jobs.deleteSchedule("s")
        _ = try await store.jobs.putSchedule(spec, replace: false)
        // Its next tick is after now; set it back to the predecessor's first, as a clock stepped back would.
        try await store.pool.write {
            try $0.execute(sql: "UPDATE tributary_schedules SET next_tick = ?", arguments: [added.nextTick])
        }
        let again = try await store.jobs.fireDueSchedules(now: added.nextTick + 2.5, catchingUp: false)
        #expect(again.jobs.count == 1, "ticks enqueued before the schedule was re-added were enqueued again")
        let info = try #require(try await store.jobs.schedules().first)
        #expect(info.fired == 1, "the schedule counts ticks that enqueued nothing: \(info.fired)")
        let ticks = try await store.pool.read {
            try Double.fetchAll($0, sql: "SELECT tick FROM tributary_jobs WHERE schedule = 's' ORDER BY tick")
        }
        #expect(ticks == [0, 1, 2].map { added.nextTick + $0 })
        try await checkInvariants()
    }

    @Test("a schedule replaced while ticks are due starts after now: the due ticks of the old expression do not fire")
    func scheduleReplacedWhileDue() async throws {
        var spec = ScheduleSpec(name: "s", cron: "@every 1s", missed: .all, job: JobSpec(kind: "noop"))
        let added = try await store.jobs.putSchedule(spec, replace: false)
        spec.cron = "@every 1h"
        let replaced = try await store.jobs.putSchedule(spec, replace: true)
        #expect(replaced.nextTick > added.nextTick)
        let fired = try await store.jobs.fireDueSchedules(now: replaced.nextTick - 1, catchingUp: true)
        #expect(fired.jobs.isEmpty && fired.next == replaced.nextTick)
        _ = try await store.jobs.deleteSchedule("s")
        #expect(try await store.jobs.fireDueSchedules(now: replaced.nextTick + 10, catchingUp: false).jobs.isEmpty)
    }

    @Test("catching up applies only to the first firing: `skip` drops the ticks missed while stopped, then fires each")
    func catchingUpOnce() async throws {
        let added = try await store.jobs.putSchedule(
            ScheduleSpec(name: "s", cron: "@every 1s", missed: .skip, job: JobSpec(kind: "noop")), replace: false)
        let first = try await store.jobs.fireDueSchedules(now: added.nextTick + 4.5, catchingUp: true)
        #expect(first.jobs.isEmpty && first.skipped == 5 && first.next == added.nextTick + 5)
        let second = try await store.jobs.fireDueSchedules(now: added.nextTick + 5.5, catchingUp: false)
        #expect(second.jobs.count == 1 && second.skipped == 0)
    }

    // MARK: - Limits that meet

    @Test(
        "a per-kind limit and a per-argument limit together: each holds, and the claim fills both as far as they allow")
    func perKindAndPerArgument() async throws {
        var limits = RunLimits()
        try limits.add("kind:export=3")
        try limits.add("kind:export/customer=1")
        let customers = ["a", "a", "a", "b", "b", "c", "d"]
        _ = try await store.jobs.pushJobs(
            customers.map { customer in
                var spec = JobSpec(kind: "export")
                spec.arguments = ["customer": customer]
                return spec
            }, batch: "e")
        func claimed() async throws -> [String] {
            try await store.jobs.claimJobs(for: "w", kinds: ["export"], limit: 10, runLimits: limits).map {
                $0.spec.arguments["customer"] ?? "?"
            }
        }
        #expect(try await claimed() == ["a", "b", "c"])
        #expect(try await claimed() == [], "a fourth started beyond the kind's limit of 3")
        let running = try await store.jobs.list(state: .running, batch: "e", limit: 10, before: nil)
        let a = try #require(running.first { $0.arguments["customer"] == "a" })
        _ = try await store.saves.applySave(
            .with {
                $0.jobID = UInt64(a.id)
                $0.attempt = UInt32(a.attempt)
                $0.completesJob = true
            }, from: "w")
        #expect(try await claimed() == ["a"], "the freed slot goes to the oldest job whose customer has room")
    }

    @Test(
        "a full rate limit names a wake-up strictly after now, when its oldest start leaves the window, and no earlier")
    func rateLimitWake() async throws {
        var limits = RunLimits()
        // An hour's window: however slow a loaded machine makes the claims below, the window stays full.
        try limits.addRate("kind:mail=2/1h")
        _ = try await store.jobs.pushJobs(Array(repeating: JobSpec(kind: "mail"), count: 5), batch: "m")
        let starts = store.writer.recentStarts
        _ = starts.nextRoom.take()
        let claimed = try await store.jobs.claimJobs(for: "w", kinds: ["mail"], limit: 10, runLimits: limits)
        #expect(claimed.count == 2)
        let oldest = try #require(
            try await store.pool.read { db in
                try Double.fetchOne(db, sql: "SELECT MIN(leased_at) FROM tributary_jobs WHERE state = 'running'")
            })
        for _ in 0..<3 {
            #expect(try await store.jobs.claimJobs(for: "w", kinds: ["mail"], limit: 10, runLimits: limits).isEmpty)
            let wake = try #require(starts.nextRoom.take(), "a full limit noted no wake-up: dispatch would stall")
            #expect(
                abs(wake - (oldest + 3_600)) < 0.001,
                "the wake-up is not when the oldest start leaves the window: \(wake - oldest) s after it")
            #expect(wake > Date().timeIntervalSince1970, "a wake-up that is already due would spin the router")
        }
        #expect(starts.nextRoom.take() == nil, "a wake-up was noted without a claim")
    }
}
