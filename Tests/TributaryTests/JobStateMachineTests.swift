import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// The job state machine (``JobTransition``) driven by random sequences of events through the store's own paths
/// (claims, saves, failures, lost and stopping workers, time-outs, restarts, `jobs cancel`, `jobs retry`, parents'
/// ends), with the store's rows and batch counters compared after each event with a model of what the events mean.
@Suite("Jobs: the state machine against a model")
struct JobStateMachineTests {
    /// What the model expects of a job.
    struct Job: Equatable, CustomStringConvertible {
        var state: JobState
        var attempt = 0
        var uncounted = 0
        var worker: String?
        /// Saves of its attempts applied: the batch index its next save must carry.
        var committed = 0
        /// Whether a queued job may be claimed now (false while it waits out a retry delay of an hour).
        var due = true
        let parent: Int64?
        let batch: String
        let timesOut: Bool

        var description: String {
            "\(state.rawValue) attempt \(attempt) uncounted \(uncounted) worker \(worker ?? "-") due \(due) "
                + "committed \(committed)"
        }
    }

    /// Per batch: done, dead, cancelled.
    struct Counters: Equatable { var done = 0, dead = 0, cancelled = 0 }

    static let maxAttempts = 3
    static let workers = ["w1", "w2", "w3"]
    static let batches = ["a", "b", "c"]

    /// The model: the jobs by id, the batches' counters.
    struct Model {
        var jobs: [Int64: Job] = [:]
        var counters: [String: Counters] = [:]

        /// A job ended dead or cancelled, or done: its batch counts it, and its waiting children settle.
        mutating func ended(_ id: Int64) {
            let job = jobs[id]!
            switch job.state {
            case .done: counters[job.batch, default: Counters()].done += 1
            case .dead: counters[job.batch, default: Counters()].dead += 1
            case .cancelled: counters[job.batch, default: Counters()].cancelled += 1
            default: preconditionFailure("\(id) has not ended")
            }
            for child in jobs.keys.sorted() where jobs[child]!.parent == id { settle(child) }
        }

        /// A waiting job whose parent ended: queued after a done one, dead after a failed one (the default
        /// policy), waiting while it runs.
        mutating func settle(_ id: Int64) {
            guard var job = jobs[id], job.state == .waiting, let parent = job.parent else { return }
            switch jobs[parent]?.state {
            case .done, nil:
                job.state = .queued
                job.due = true
                jobs[id] = job
            case .dead, .cancelled:
                job.state = .dead
                jobs[id] = job
                ended(id)
            default: break
            }
        }

        /// A failed attempt that counts: dead after the last attempt or a permanent failure, else queued (`due`
        /// at once for a lost attempt, after the hour's delay for a failure).
        mutating func failed(_ id: Int64, permanent: Bool, due: Bool) {
            var job = jobs[id]!
            job.worker = nil
            if permanent || job.attempt - job.uncounted >= JobStateMachineTests.maxAttempts {
                job.state = .dead
                jobs[id] = job
                ended(id)
            } else {
                job.state = .queued
                job.due = due
                jobs[id] = job
            }
        }

        mutating func handBack(_ id: Int64) {
            jobs[id]!.state = .queued
            jobs[id]!.worker = nil
            jobs[id]!.uncounted += 1
            jobs[id]!.due = true
        }

        func running(_ worker: String? = nil) -> [Int64] {
            jobs.keys.sorted().filter { jobs[$0]!.state == .running && (worker == nil || jobs[$0]!.worker == worker) }
        }
    }

    /// `body`'s value or error.
    static func result<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// Drives `events` random events from `seed`, checking the store against the model after each.
    static func run(seed: UInt64, events: Int) async throws {
        let temporary = try TemporaryStore(modelJSON: DemoData.modelJSON, durability: .normal)
        let jobs = temporary.store.jobs
        var random = SeededGenerator(seed: seed)
        var model = Model()
        var pushes = 0
        var visited: Set<JobState> = []
        for step in 0..<events {
            let ids = model.jobs.keys.sorted()
            let some = ids.randomElement(using: &random)
            let event = Int.random(in: 0..<100, using: &random)
            var what = ""
            switch event {
            case 0..<14 where model.jobs.count < 60 || event < 3:
                // Push a job, a third of them after an earlier job.
                let parent = Bool.random(using: &random) && Int.random(in: 0..<3, using: &random) == 0 ? some : nil
                let batch = batches.randomElement(using: &random)!
                let timesOut = Int.random(in: 0..<4, using: &random) == 0
                var spec = JobSpec(kind: "k", maxAttempts: UInt32(maxAttempts), backoffBase: .seconds(3_600))
                spec.backoffCap = .seconds(3_600)
                if let parent { spec.afterJobs = [parent] }
                if timesOut { spec.timeout = .seconds(30) }
                let pushed = try await jobs.pushJobs([spec], batch: batch)
                let id = pushed.ids[0]
                pushes += 1
                model.jobs[id] = Job(
                    state: parent == nil ? .queued : .waiting, parent: parent, batch: batch, timesOut: timesOut)
                model.settle(id)
                what = "push \(id) after \(parent.map(String.init) ?? "-")"
            case 0..<30:
                let worker = workers.randomElement(using: &random)!
                let limit = Int.random(in: 1...3, using: &random)
                let due = ids.filter { model.jobs[$0]!.state == .queued && model.jobs[$0]!.due }
                let claimed = try await jobs.claimJobs(for: worker, kinds: ["k"], limit: limit)
                what = "claim \(limit) for \(worker): \(claimed.map(\.id))"
                #expect(claimed.count == min(limit, due.count), "\(what) of due \(due)")
                for job in claimed {
                    #expect(due.contains(job.id), "\(what): \(job.id) was not due")
                    model.jobs[job.id]!.state = .running
                    model.jobs[job.id]!.attempt += 1
                    model.jobs[job.id]!.worker = worker
                    #expect(job.attempt == model.jobs[job.id]!.attempt, "\(what): attempt")
                }
            case 30..<45:
                // A save of the attempt that holds the job: progress or its completion; or a late one of an attempt
                // that no longer does.
                guard let id = some, let job = model.jobs[id], job.attempt > 0 else { continue }
                let holds = job.state == .running
                let completes = Bool.random(using: &random)
                let attempt = holds ? job.attempt : job.attempt - Int.random(in: 0...1, using: &random)
                what = "\(completes ? "complete" : "progress") \(id) attempt \(attempt) (\(job))"
                let save = SaveRequest(
                    jobID: id, attempt: attempt, batchIndex: job.committed, progressDone: 1, completesJob: completes,
                    changes: Tributary_V1_ChangeSet())
                let outcome = await result { try await temporary.store.saves.applySave(save, from: job.worker ?? "w1") }
                if holds {
                    #expect((try? outcome.get()) != nil, "\(what): \(outcome)")
                    model.jobs[id]!.committed += 1
                    if completes {
                        model.jobs[id]!.state = .done
                        model.jobs[id]!.worker = nil
                        model.ended(id)
                    }
                } else if job.state == .done {
                    #expect((try? outcome.get()) != nil, "\(what): a done job's save was applied before")
                } else {
                    #expect((try? outcome.get()) == nil, "\(what): a late save is refused")
                }
            case 45..<57:
                guard let id = some, let job = model.jobs[id], job.attempt > 0 else { continue }
                let permanent = Int.random(in: 0..<4, using: &random) == 0
                let current = job.state == .running && Bool.random(using: &random)
                let attempt = current ? job.attempt : job.attempt - 1
                what = "fail \(id) attempt \(attempt) permanent \(permanent) (\(job))"
                let failure = try await jobs.failJob(
                    id: id, attempt: attempt, worker: job.worker ?? "w1", message: "failed", permanent: permanent)
                let holds = job.state == .running && attempt == job.attempt
                #expect((failure != nil) == holds, "\(what)")
                if holds { model.failed(id, permanent: permanent, due: false) }
            case 57..<63:
                // A worker lost: its attempts count; those claimed but never sent go back uncounted.
                let worker = workers.randomElement(using: &random)!
                let running = model.running(worker)
                let started = Set(running.filter { _ in Bool.random(using: &random) })
                what = "lose \(worker) running \(running) started \(started.sorted())"
                _ = try await jobs.requeueJobsNamingFailed(of: worker, started: started)
                for id in running {
                    if started.contains(id) {
                        model.failed(id, permanent: false, due: true)
                    } else {
                        model.handBack(id)
                    }
                }
            case 63..<68:
                let worker = workers.randomElement(using: &random)!
                what = "hand back \(worker)'s \(model.running(worker))"
                #expect(try await jobs.releaseJobs(of: worker) == model.running(worker).count, "\(what)")
                for id in model.running(worker) { model.handBack(id) }
            case 68..<71:
                let running = model.running().filter { model.jobs[$0]!.timesOut }
                what = "time out \(running)"
                let timedOut = try await jobs.failTimedOutAttempts(now: Date().addingTimeInterval(3_600))
                #expect(timedOut.map(\.jobID).sorted() == running, "\(what)")
                for id in running { model.failed(id, permanent: false, due: false) }
            case 71..<73:
                // A restart, or a cluster's new primary sparing the jobs leased under its own ids (here, one worker's).
                let spared = Bool.random(using: &random) ? workers.randomElement(using: &random)! : nil
                let running = model.running().filter { model.jobs[$0]!.worker != spared }
                what = "restart with \(running) running, sparing \(spared ?? "none")"
                _ = try await jobs.requeueAfterRestart(sparing: spared)
                for id in running { model.failed(id, permanent: false, due: true) }
            case 73..<75:
                // A worker registered anew (as `to`) names the attempts it still runs under its old id, some of them
                // late (an earlier attempt), and another worker's job: taken on only as a cluster's primary (whose
                // ids start with `to`, here) takes on any attempt an earlier primary leased.
                let from = workers.randomElement(using: &random)!
                let to = workers.filter { $0 != from }.randomElement(using: &random)!
                let asPrimary = Bool.random(using: &random)
                var held = model.running(from).filter { _ in Int.random(in: 0..<4, using: &random) > 0 }
                var named = model.running(from).map { id in
                    JobStore.HeldAttempt(job: id, attempt: Int64(model.jobs[id]!.attempt - (held.contains(id) ? 0 : 1)))
                }
                if let other = model.running().first(where: { model.jobs[$0]!.worker != from }) {
                    named.append(JobStore.HeldAttempt(job: other, attempt: Int64(model.jobs[other]!.attempt)))
                    if asPrimary && model.jobs[other]!.worker != to { held.append(other) }
                }
                what = "adopt \(from)'s \(named.map { "\($0.job)#\($0.attempt)" }) by \(to), as primary \(asPrimary)"
                let adopted = try await jobs.adoptJobs(named, from: [from], grantedBefore: asPrimary ? to : "", to: to)
                #expect(adopted.sorted() == held.sorted(), "\(what): \(adopted)")
                for id in held { model.jobs[id]!.worker = to }
            case 75..<78:
                what = "stop: hand back \(model.running())"
                #expect(try await jobs.releaseAllRunningJobs() == model.running().count, "\(what)")
                for id in model.running() { model.handBack(id) }
            case 78..<88:
                guard let id = some, let job = model.jobs[id] else { continue }
                what = "cancel \(id) (\(job))"
                let result = await result { try await jobs.cancelJob(id: id) }
                if [.waiting, .queued, .running].contains(job.state) {
                    #expect((try? result.get()) != nil, "\(what): \(result)")
                    model.jobs[id]!.state = .cancelled
                    model.jobs[id]!.worker = nil
                    model.ended(id)
                } else {
                    #expect(throws: StoreError.self, "\(what)") { try result.get() }
                }
            default:
                guard let id = some, let job = model.jobs[id] else { continue }
                what = "retry \(id) (\(job))"
                let result = await result { try await jobs.retryJob(id: id) }
                if job.state == .dead {
                    #expect((try? result.get()) != nil, "\(what): \(result)")
                    model.counters[job.batch]!.dead -= 1
                    model.jobs[id]!.uncounted = job.attempt
                    model.jobs[id]!.due = true
                    model.jobs[id]!.state = job.parent == nil ? .queued : .waiting
                    model.settle(id)
                } else {
                    #expect(throws: StoreError.self, "\(what)") { try result.get() }
                }
            }
            try await check(temporary, against: model, after: "step \(step) of seed \(seed): \(what)")
            visited.formUnion(model.jobs.values.map(\.state))
        }
        #expect(pushes > 20)
        #expect(visited == Set(JobState.allCases), "every state reached: \(visited)")
    }

    /// The store's job rows and batch counters equal the model's.
    static func check(_ temporary: TemporaryStore, against model: Model, after what: String) async throws {
        let now = Date().timeIntervalSince1970
        let (rows, counters) = try temporary.store.pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql:
                    "SELECT id, state, attempt, uncounted, worker, run_at, committed_batches FROM tributary_jobs ORDER BY id"
            )
            let counters = try Row.fetchAll(
                db, sql: "SELECT batch, done_jobs, dead_jobs, cancelled_jobs FROM tributary_batches")
            return (rows, counters)
        }
        #expect(rows.count == model.jobs.count, "\(what)")
        for row in rows {
            let id: Int64 = row["id"]
            guard let job = model.jobs[id] else {
                Issue.record("\(what): job \(id) is not in the model")
                continue
            }
            let stored = Job(
                state: JobState(rawValue: row["state"])!, attempt: row["attempt"], uncounted: row["uncounted"],
                worker: row["worker"], committed: row["committed_batches"],
                due: job.state == .queued ? (row["run_at"] as Double) <= now : job.due,
                parent: job.parent, batch: job.batch, timesOut: job.timesOut)
            #expect(stored == job, "\(what): job \(id) is \(stored), the model says \(job)")
        }
        for row in counters {
            let batch: String = row["batch"]
            let stored = Counters(done: row["done_jobs"], dead: row["dead_jobs"], cancelled: row["cancelled_jobs"])
            #expect(stored == model.counters[batch, default: Counters()], "\(what): batch \(batch)'s counters")
        }
    }

    @Test("random events move every job only along the table's transitions, as the model says", arguments: [1, 2, 3])
    func randomEvents(seed: UInt64) async throws {
        try await Self.run(seed: seed, events: 3_400)
    }
}
