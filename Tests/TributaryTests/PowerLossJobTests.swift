import CPowerLoss
import Foundation
import GRDBSQLite
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

extension PowerLossTests {
    /// Jobs through a power loss: pushes, claims, a job's batch saves and its completion (the last batch's save), as
    /// a worker's arrive at the store's write path, the power lost at operations spread over the run, the store opened
    /// again as a coordinator opens it (jobs left running go back to the queue). At `full` every acknowledged push,
    /// batch and completion is there; at both levels each job is done with every batch's rows, or queued again with
    /// exactly the rows of the batches it has committed (a batch's rows, its history record and the job's counter are
    /// one transaction), and the file is intact.
    @Suite("Power loss: job claims, batches and completions at each durability level")
    struct JobTests {
        let directory = try! TemporaryDirectory()
        static let jobs = 8
        static let batches = 3
        static let rowsPerBatch = 2

        init() {
            #expect(power_loss_register() == SQLITE_OK)
        }

        /// What was acknowledged before the power was lost.
        struct Acknowledged {
            var pushes = 0
            /// (job, batch) of each acknowledged batch save.
            var batches: [(job: Int64, batch: Int)] = []
            var completed: [Int64] = []
        }

        static func login(job: Int64, batch: Int, row: Int) -> String { "j\(job)-b\(batch)-\(row)" }

        /// Pushes the jobs, then claims each and saves its batches (the last completing it), until an operation fails.
        func run(_ durability: Durability, crashPoint: Int64?, path: String) async throws -> (Acknowledged, Int64) {
            let store = try RootStore.open(path: path, model: DemoData.model, durability: durability)
            let start = power_loss_operations()
            if let crashPoint { power_loss_arm(crashPoint) }
            var acknowledged = Acknowledged()
            work: do {
                for index in 0..<Self.jobs {
                    guard
                        case .success = await store.saves.queuePush([JobSpec(kind: "import")], batch: "b\(index)").value
                    else { break work }
                    acknowledged.pushes += 1
                }
                for _ in 0..<Self.jobs {
                    guard let job = try await store.jobs.claimJob(for: "w1", kinds: ["import"]) else { break work }
                    for batch in 0..<Self.batches {
                        var save = Tributary_V1_SaveChanges()
                        save.jobID = UInt64(job.id)
                        save.attempt = UInt32(job.attempt)
                        save.batchIndex = UInt32(batch)
                        save.completesJob = batch == Self.batches - 1
                        save.changes.batches = [
                            .with {
                                $0.entity = "User"
                                $0.operation = .insert
                                $0.ids = (0..<Self.rowsPerBatch).reduce(Data()) { ids, _ in ids + UUID().bytes }
                                $0.columns = [
                                    .with {
                                        $0.name = "login"
                                        $0.strings = (0..<Self.rowsPerBatch).map {
                                            Self.login(job: job.id, batch: batch, row: $0)
                                        }
                                    }
                                ]
                            }
                        ]
                        _ = try await store.saves.applySave(save, from: "w1")
                        acknowledged.batches.append((job.id, batch))
                        if save.completesJob { acknowledged.completed.append(job.id) }
                    }
                }
            } catch {
                // The power was lost under this operation: nothing after it runs.
            }
            let operations = power_loss_operations() - start
            try? store.close()
            return (acknowledged, operations)
        }

        /// Runs at crash points spread over an uncrashed run and checks each store after the loss; returns how many
        /// acknowledged batches were lost in all.
        func crashes(_ durability: Durability) async throws -> Int {
            power_loss_watch(directory.url.path)
            defer { power_loss_watch(nil) }
            let (whole, operations) = try await run(
                durability, crashPoint: nil, path: directory.path("\(durability)-whole.sqlite"))
            #expect(whole.completed.count == Self.jobs, "the uncrashed run did every job")
            var lostBatches = 0
            var checked = 0
            let points = StoreTests.crashPoints
            for index in 0..<points {
                let path = directory.path("jobs-\(durability)-\(index).sqlite")
                let (acknowledged, _) = try await run(
                    durability, crashPoint: operations * Int64(index) / Int64(points), path: path)
                #expect(power_loss_apply(UInt32(index + 1), 20) >= 0)
                let point = "\(durability), crash point \(index)"
                power_loss_watch(nil)
                defer { power_loss_watch(directory.url.path) }
                var db: OpaquePointer?
                guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw HarnessError("cannot open \(path)") }
                defer { sqlite3_close_v2(db) }
                #expect(try PowerLossTests.strings(db, "PRAGMA integrity_check") == ["ok"], "\(point)")
                guard
                    try !PowerLossTests.strings(db, "SELECT name FROM sqlite_master WHERE name = 'tributary_jobs'")
                        .isEmpty
                else {
                    #expect(acknowledged.pushes == 0, "\(point): a store without tables")
                    continue
                }
                // A coordinator opens what is left: jobs it finds running go back to the queue.
                try RootStore.open(path: path, model: DemoData.model, durability: durability).close()
                let jobs = try PowerLossTests.strings(
                    db, "SELECT id || ' ' || state || ' ' || committed_batches FROM tributary_jobs"
                )
                .map { $0.split(separator: " ").map(String.init) }
                #expect(jobs.count >= (durability == .full ? acknowledged.pushes : 0), "\(point): a push lost")
                let logins = Set(try PowerLossTests.strings(db, "SELECT login FROM User"))
                var rowsExpected = 0
                for job in jobs {
                    let (id, state, committed) = (Int64(job[0])!, job[1], Int(job[2])!)
                    #expect(
                        state == (committed == Self.batches ? "done" : "queued"),
                        "\(point): job \(id) \(state) after \(committed) batches")
                    for batch in 0..<Self.batches {
                        for row in 0..<Self.rowsPerBatch {
                            let present = logins.contains(Self.login(job: id, batch: batch, row: row))
                            #expect(present == (batch < committed), "\(point): job \(id) batch \(batch) row \(row)")
                        }
                    }
                    rowsExpected += committed * Self.rowsPerBatch
                }
                #expect(logins.count == rowsExpected, "\(point): rows of no job's committed batch")
                let history = try PowerLossTests.strings(db, "SELECT count(*) FROM tributary_history").first.flatMap {
                    Int($0)
                }
                #expect(history == rowsExpected / Self.rowsPerBatch, "\(point): a history record per committed batch")
                let committedBy = Dictionary(uniqueKeysWithValues: jobs.map { (Int64($0[0])!, Int($0[2])!) })
                let lost = acknowledged.batches.filter { (committedBy[$0.job] ?? 0) <= $0.batch }
                lostBatches += lost.count
                if durability == .full {
                    #expect(lost.isEmpty, "\(point): acknowledged batches lost: \(lost)")
                    for id in acknowledged.completed {
                        #expect(committedBy[id] == Self.batches, "\(point): job \(id)'s acknowledged completion lost")
                    }
                }
                checked += acknowledged.pushes + acknowledged.batches.count
            }
            print(
                "power loss, jobs (\(durability)): \(points) crash points, \(checked) acknowledged pushes and batches "
                    + "checked, \(lostBatches) acknowledged batches lost")
            return lostBatches
        }

        @Test(
            "full: every acknowledged push, batch and completion survives; each job done or queued with its batches' rows once"
        )
        func full() async throws {
            #expect(try await crashes(.full) == 0)
        }

        @Test("normal: each job done, or queued again with exactly its committed batches' rows; the store is intact")
        func normal() async throws {
            _ = try await crashes(.normal)
        }
    }
}
